"""ringside_steps.py: mark training steps for ringside (docs/steps.md). Standard library only.

    from ringside_steps import step_marker
    mark = step_marker()
    for step in range(steps):
        mark(step)          # at the start of each step, with your own numbering
        ...

When the job runs under `ringside record` (libringside_preload.so preloaded), mark(n) calls the
library's ringside_step(n): ringside then takes its steps from these markers instead of detecting
them from the repeating calls. Anywhere else it does nothing, at the cost of one Python call.
Copy this file next to your training script, or add samples/ to sys.path.
"""

import ctypes

__all__ = ["step_marker", "available"]


def _find():
    try:
        # dlopen(NULL): the program and every library loaded globally, LD_PRELOAD's first.
        fn = ctypes.CDLL(None).ringside_step
    except (AttributeError, OSError):
        return None
    fn.argtypes = [ctypes.c_int64]
    fn.restype = None
    return fn


_RINGSIDE_STEP = _find()


def available():
    """True when the preload library is loaded (markers will be recorded)."""
    return _RINGSIDE_STEP is not None


def _nothing(_step):
    return None


def step_marker():
    """The function to call once per step with the step number (an int)."""
    if _RINGSIDE_STEP is None:
        return _nothing
    fn = _RINGSIDE_STEP
    return lambda step: fn(int(step))
