"""Which device runs the learner's inference and training: inference.device."""
import importlib.metadata

import tensorflow as tf

DEVICES = ("auto", "cpu", "gpu")
INSTALL_GPU = "./run_local.sh --gpu ... (or .venv/bin/pip install -e '.[gpu]') installs TensorFlow's CUDA wheels"


def gpu_names(gpus) -> list[str]:
    names = []
    for gpu in gpus:
        try:
            names.append(tf.config.experimental.get_device_details(gpu).get("device_name") or gpu.name)
        except (RuntimeError, ValueError):
            names.append(gpu.name)
    return names


def why_no_gpu() -> str:
    """The likeliest reason TensorFlow lists no GPU, with its fix."""
    if not tf.test.is_built_with_cuda():
        return f"this TensorFlow is built without CUDA; {INSTALL_GPU}"
    if not any((d.metadata["Name"] or "").startswith("nvidia-cudnn") for d in importlib.metadata.distributions()):
        return f"TensorFlow's CUDA and cuDNN wheels are not installed; {INSTALL_GPU}"
    return ("TensorFlow's CUDA wheels are installed but no GPU answers: check that nvidia-smi lists one and "
            "that CUDA_VISIBLE_DEVICES does not hide it")


def select_device(device: str) -> str:
    """Makes `device` ('auto': a GPU when TensorFlow sees one, else the CPU; 'cpu'; 'gpu': refused at
    start when none is usable) the one TensorFlow places the learner's ops on; returns what it is, in
    words, for the start-up line. Must run before TensorFlow's first op."""
    if device not in DEVICES:
        raise ValueError(f"inference.device={device!r} is unknown; use one of {', '.join(map(repr, DEVICES))}")
    if device == "cpu":
        tf.config.set_visible_devices([], "GPU")
        return "the CPU (inference.device='cpu')"
    gpus = tf.config.list_physical_devices("GPU")
    if not gpus:
        if device == "gpu":
            raise ValueError(f"inference.device='gpu', but TensorFlow finds no usable GPU: {why_no_gpu()}; or "
                             "bind inference.device='auto' to train on the CPU")
        return "the CPU (no GPU visible to TensorFlow)"
    names = gpu_names(gpus)
    more = f"; {len(gpus)} GPUs visible, create_strategy.kind='mirrored' trains on all" if len(gpus) > 1 else ""
    return f"GPU:0 ({names[0]}){more}"
