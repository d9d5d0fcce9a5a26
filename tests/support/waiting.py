"""Waiting for something a process or a page does, with a deadline that says what never happened."""
import time


def wait_until(cond, timeout=60.0, what="condition"):
    """cond()'s first truthy value, polled every 0.1 s; AssertionError naming `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = cond()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")
