"""ember.train: the Learner, metrics, checkpoints, logs and the terminal dashboard.

>>> from ember.train import Learner, EarlyStopping, Accuracy
"""

from .callback import Callback  # noqa: F401
from .callbacks import EarlyStopping, LambdaCallback  # noqa: F401
from .checkpoint import Checkpointer, CheckpointError, load_checkpoint, save_checkpoint  # noqa: F401
from .history import History  # noqa: F401
from .learner import Learner  # noqa: F401
from .loggers import CSVLogger, ExperimentLog, JSONLLogger  # noqa: F401
from .metrics import (  # noqa: F401
    AUROC,
    F1,
    Accuracy,
    ConfusionMatrix,
    CpuMemory,
    FBeta,
    GpuMemory,
    LearningRate,
    Loss,
    Metric,
    Perplexity,
    Precision,
    Recall,
    Throughput,
    TopKAccuracy,
    get_metric,
)
from .plots import PlotWriter, plot_history  # noqa: F401
from .state import TrainState  # noqa: F401

__all__ = ["Learner", "Callback", "TrainState", "History", "EarlyStopping", "LambdaCallback", "Checkpointer",
           "CheckpointError", "load_checkpoint", "save_checkpoint", "CSVLogger", "JSONLLogger", "ExperimentLog",
           "PlotWriter", "plot_history", "Metric", "Loss", "Accuracy", "TopKAccuracy", "Precision", "Recall", "FBeta",
           "F1", "AUROC", "ConfusionMatrix", "Perplexity", "LearningRate", "Throughput", "CpuMemory", "GpuMemory",
           "get_metric"]
