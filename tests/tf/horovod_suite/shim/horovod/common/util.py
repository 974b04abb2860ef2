"""The one helper of horovod.common.util the Keras tests import."""

from packaging import version


def is_version_greater_equal_than(ver, target):
    return version.parse(ver) >= version.parse(target)
