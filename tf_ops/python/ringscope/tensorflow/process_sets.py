"""Process sets, as Horovod's: collectives among a subset of the ranks (model
parallelism, mixtures of experts). A ProcessSet names its ranks (in the
world); init(process_sets=[...]) or add_process_set() registers it with
the runtime, which gives it an id, the same on every rank, and a runtime of
its own among those ranks (runtime/src/process_sets.h). Every collective,
DistributedOptimizer and DistributedGradientTape take ``process_set=``.

Adding and removing are collective over every rank, in the same order on
each, as Horovod's dynamic process sets; they work with or without
HOROVOD_DYNAMIC_PROCESS_SETS (ringscope needs no mode for them)."""

import ctypes

from ringscope.tensorflow._library import RingscopeError, c as _c, call as _call


class ProcessSet:
    """A set of ranks that run collectives together. Built from a list of
    world ranks or an mpi4py communicator; registered by init() or
    add_process_set(), which set ``process_set_id``."""

    process_set_id = None
    ranks = None
    mpi_comm = None

    def __init__(self, ranks_or_comm):
        if hasattr(ranks_or_comm, "Get_group"):  # an mpi4py communicator
            from mpi4py import MPI

            group = ranks_or_comm.Get_group()
            self.ranks = sorted(MPI.Group.Translate_ranks(group, list(range(group.Get_size())),
                                                          MPI.COMM_WORLD.Get_group()))
            self.mpi_comm = ranks_or_comm
            return
        try:
            ranks = sorted(ranks_or_comm)
        except TypeError:
            raise ValueError("ProcessSet should be initialized with a list of process ranks or "
                             "an mpi4py Comm object") from None
        if any(not isinstance(r, int) or isinstance(r, bool) for r in ranks):
            raise ValueError("ProcessSet should be initialized with a list of process ranks or "
                             f"an mpi4py Comm object, got {ranks_or_comm!r}")
        self.ranks = ranks

    def size(self):
        """The number of ranks, or None while not registered."""
        if self.process_set_id is None:
            return None
        return _c.ringscope_c_process_set_size(self.process_set_id)

    def rank(self):
        """This rank's rank within the set (None while not registered, -1
        outside it). Collectives take world ranks (a broadcast's root)."""
        if self.process_set_id is None:
            return None
        return _c.ringscope_c_process_set_rank(self.process_set_id)

    def included(self):
        """Whether this rank is in the set (None without ranks)."""
        if self.ranks is None:
            return None
        from ringscope.tensorflow import rank

        return rank() in self.ranks

    def __str__(self):
        return (f"ProcessSet(process_set_id={self.process_set_id}, ranks={self.ranks}, "
                f"mpi_comm={self.mpi_comm})")

    __repr__ = __str__


global_process_set = ProcessSet([])
global_process_set.process_set_id = 0


def _ids_and_ranks():
    """Every registered set: {id: world ranks} (0: every rank)."""
    need = _c.ringscope_c_process_sets(None, 0)
    buf = ctypes.create_string_buffer(max(need, 1))
    _c.ringscope_c_process_sets(buf, len(buf))
    out = {}
    for item in filter(None, buf.value.decode().split(";")):
        key, _, ranks = item.partition(":")
        out[int(key)] = [int(r) for r in ranks.split(",") if r]
    return out


def _on_init(process_sets):
    """Called by init(): the world's ranks, then each static set added in
    order (a set listed twice is invalidated, as Horovod's)."""
    global_process_set.ranks = _ids_and_ranks().get(0, [])
    if process_sets in (None, "dynamic"):
        return
    seen = {0}
    for ps in process_sets:
        if not isinstance(ps, ProcessSet):
            raise ValueError(f"init(process_sets=...) takes ProcessSet objects, got {ps!r}")
        existing = {tuple(r): i for i, r in _ids_and_ranks().items()}
        if tuple(ps.ranks) in existing:
            ps.process_set_id = existing[tuple(ps.ranks)]
        else:
            add_process_set(ps)
        if ps.process_set_id in seen:
            ps.process_set_id = None
        else:
            seen.add(ps.process_set_id)


def add_process_set(process_set):
    """Registers a ProcessSet (or a list of ranks) and returns it, with its
    id. Collective: every rank calls it with the same ranks. A set of the
    same ranks must not exist (ValueError)."""
    if not isinstance(process_set, ProcessSet):
        process_set = ProcessSet(process_set)
    out = ctypes.c_int(-1)
    try:
        _call(_c.ringscope_c_add_process_set, (ctypes.c_int * len(process_set.ranks))(
            *process_set.ranks), len(process_set.ranks), ctypes.byref(out))
    except RingscopeError as e:
        if str(e).startswith("InvalidArgument"):
            raise ValueError(f"ringscope: could not add {process_set}: {e}") from None
        raise
    process_set.process_set_id = out.value
    return process_set


def remove_process_set(process_set):
    """Removes a registered set (collective) and invalidates the object;
    returns whether it was removed (never the global set)."""
    process_set_id = process_set.process_set_id
    if process_set_id is None or process_set_id == 0:
        return False
    process_set.process_set_id = None
    try:
        _call(_c.ringscope_c_remove_process_set, process_set_id)
    except RingscopeError as e:
        if "does not exist" in str(e):
            return False
        raise
    return True


def process_set_id_of(process_set):
    """The id a collective passes to its op: 0 for None or the global set;
    a ValueError for a set that is not registered (or was removed)."""
    if process_set is None or process_set is global_process_set:
        return 0
    if not isinstance(process_set, ProcessSet):
        raise ValueError(f"process_set must be a ProcessSet, got {process_set!r}")
    process_set_id = process_set.process_set_id
    if process_set_id is None:
        raise ValueError(f"{process_set} is not registered: pass it to init(process_sets=...) "
                         "or add_process_set()")
    if process_set_id != 0 and _c.ringscope_c_process_set_size(process_set_id) < 0:
        raise ValueError(f"{process_set}: no process set has id {process_set_id}")
    return process_set_id
