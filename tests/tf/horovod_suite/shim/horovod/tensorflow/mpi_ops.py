"""horovod.tensorflow.mpi_ops: what Horovod's tests reach through it (the
process-set table, through its _basics object); every other name is
ringscope.tensorflow's."""

from ringscope.tensorflow.process_sets import _ids_and_ranks

from horovod._forward import forwarder


class _Basics:
    @staticmethod
    def _get_process_set_ids_and_ranks():
        return _ids_and_ranks()


_basics = _Basics()

__getattr__ = forwarder("ringscope.tensorflow")
