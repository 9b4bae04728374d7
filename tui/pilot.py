"""Waiting on the app under Textual's Pilot, for the tests and the screenshot tool."""

from __future__ import annotations

QUIET_CHECKS = 4     # an edit's Changed message reaches the app through the queues of the widgets above it


async def settle(pilot, checks: int = 1000) -> None:
    """Wait until the debounce timer has fired, every worker (load, translate) has finished, and the
    app has stayed so over QUIET_CHECKS pauses. A single check can come before an edit's Changed
    message has bubbled up to the app (each widget passes it on in a later turn), and pass while a
    translation is about to be asked for: on a loaded machine that made a test fail now and then."""
    app = pilot.app
    quiet = 0
    for _ in range(checks):
        await pilot.pause(0.02)
        quiet = 0 if app.busy else quiet + 1
        if quiet >= QUIET_CHECKS:
            break
    await app.workers.wait_for_complete()
    await pilot.pause()
