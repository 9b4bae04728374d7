"""runtime/threads.py's Background: the Translator's loading builds its sessions beside the tokenizer.
(run_in_threads is tested through parallel batches in test_runtime_translator.py.)"""

import threading
import time

import pytest

from mtkit.runtime.threads import Background


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
