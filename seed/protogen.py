"""Regenerates the committed protobuf/gRPC modules from protos/seed.proto.

Run `python -m seed.protogen` after editing the proto. The generated gRPC module
imports its message module by a top-level name; we rewrite that import to a
relative one so the modules live inside the `seed` package.
"""
import pathlib
import subprocess
import sys
import tempfile

REPO_ROOT = pathlib.Path(__file__).resolve().parent.parent
PROTO_DIR = REPO_ROOT / "protos"
PACKAGE_DIR = REPO_ROOT / "seed"
GENERATED = ("seed_pb2.py", "seed_pb2_grpc.py")


def generate(out_dir: pathlib.Path) -> None:
    """Writes the generated modules for protos/seed.proto into out_dir."""
    import grpc_tools  # Only needed at development time (the `test` extra).

    include = pathlib.Path(grpc_tools.__file__).parent / "_proto"
    # A separate process: protoc's C++ runtime can clash with other native
    # extensions already loaded in this one.
    subprocess.run([
        sys.executable, "-m", "grpc_tools.protoc", f"-I{PROTO_DIR}", f"-I{include}",
        f"--python_out={out_dir}", f"--grpc_python_out={out_dir}", str(PROTO_DIR / "seed.proto"),
    ], check=True)
    grpc_module = out_dir / "seed_pb2_grpc.py"
    text = grpc_module.read_text()
    grpc_module.write_text(
            text.replace("import seed_pb2 as seed__pb2", "from seed import seed_pb2 as seed__pb2"))


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        generate(pathlib.Path(tmp))
        for name in GENERATED:
            (PACKAGE_DIR / name).write_text((pathlib.Path(tmp) / name).read_text())
    print("regenerated", ", ".join(GENERATED))
    return 0


if __name__ == "__main__":
    sys.exit(main())
