#!/usr/bin/env bash
# mpirun with what this kind of machine needs: running as root is allowed,
# more ranks than cores is allowed, ranks are not pinned to cores.
exec mpirun --allow-run-as-root --oversubscribe --bind-to none "$@"
