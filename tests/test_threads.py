"""runtime/threads.py: Background, with which the Translator's loading builds its sessions beside the
tokenizer, and run_in_threads, which decodes batches in parallel (also tested through parallel batches
in test_runtime_translator.py)."""

import threading
import time

import pytest

from mtkit.runtime.threads import Background, run_in_threads


def test_result_is_the_calls_value_and_its_error_is_raised_by_result():
    assert Background(lambda a, b: a + b, 2, 3).result() == 5
    failing = Background(int, "not a number")
    with pytest.raises(ValueError, match="not a number"):
        failing.result()


def test_leaving_after_the_callers_own_error_waits_for_the_call_and_raises_the_callers_error():
    finished = threading.Event()

    def slow():
        time.sleep(0.2)
        finished.set()
        raise RuntimeError("the background call's error")

    with pytest.raises(KeyError, match="the caller's error"):
        with Background(slow):
            raise KeyError("the caller's error")
    assert finished.is_set()      # not left running


def test_the_callers_error_is_raised_once_the_batches_already_running_have_ended():
    # Ctrl-C in the caller while a helper is inside ONNX Runtime: had the error left at once, the
    # interpreter could exit under the running helper and the process abort (exit 134, not 130).
    helper_started, helper_finished = threading.Event(), threading.Event()

    def run(batch):
        if threading.current_thread() is threading.main_thread():
            helper_started.wait()     # so the helper holds the other batch
            raise KeyboardInterrupt
        helper_started.set()
        time.sleep(0.3)
        helper_finished.set()
        return batch

    with pytest.raises(KeyboardInterrupt):
        run_in_threads(run, ["a", "b", "c"], threads=2)
    assert helper_finished.is_set()
    assert not any(t.name == "mtkit-decode" and t.is_alive() for t in threading.enumerate())
