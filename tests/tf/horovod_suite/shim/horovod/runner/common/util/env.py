"""horovod.runner.common.util.env.get_env_rank_and_size: this rank and the
world's size from the launcher's environment (Open MPI's or another
MPI's), before init."""

import os


def get_env_rank_and_size():
    for rank_var, size_var in (("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),
                               ("PMI_RANK", "PMI_SIZE"), ("HOROVOD_RANK", "HOROVOD_SIZE")):
        if rank_var in os.environ and size_var in os.environ:
            return int(os.environ[rank_var]), int(os.environ[size_var])
    return None
