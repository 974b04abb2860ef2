"""in_thread, which Horovod's test utilities import."""

import threading


def in_thread(target, args=(), name=None, daemon=True, silent=False):
    def run():
        try:
            target(*args)
        except Exception:
            if not silent:
                raise

    thread = threading.Thread(target=run, name=name, daemon=daemon)
    thread.start()
    return thread
