"""The ``ember`` command line."""

from __future__ import annotations

import argparse
import sys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="ember", description="ember: tensors, training and tools")
    sub = parser.add_subparsers(dest="command")
    sub.add_parser("demo", help="train a small classifier on the CPU (the quickstart example)")
    sub.add_parser("version", help="print ember's version")
    args = parser.parse_args(argv)
    if args.command == "demo":
        from .examples import quickstart
        return quickstart.main()
    if args.command == "version":
        import ember
        print(ember.__version__)
        return 0
    parser.print_help()
    return 0


if __name__ == "__main__":
    sys.exit(main())
