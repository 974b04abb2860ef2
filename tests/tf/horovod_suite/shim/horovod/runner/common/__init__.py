"""horovod.runner.common: the one helper Horovod's process-set tests import."""
