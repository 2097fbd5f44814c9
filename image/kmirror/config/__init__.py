"""The one configuration model and the dialects (MirrorMaker 1, MirrorMaker 2, KUDO) that
feed it."""

from kmirror.config.model import (
    ClusterConfig,
    MirrorConfig,
    RenamePolicy,
    TopicSelection,
)
from kmirror.config.secret import Secret, is_secret_key, mask_config

__all__ = [
    "ClusterConfig",
    "MirrorConfig",
    "RenamePolicy",
    "Secret",
    "TopicSelection",
    "is_secret_key",
    "mask_config",
]
