"""The ``--render-live`` window (OpenCV) and the check that a display can open one."""

from __future__ import annotations

import os
import sys

import numpy as np

__all__ = ["DisplayUnavailable", "LiveViewer", "check_display"]


class DisplayUnavailable(RuntimeError):
    """``--render-live`` on a machine without a usable display."""


_DISPLAY_OK = False


def check_display() -> None:
    """Raise :class:`DisplayUnavailable` (one line) when no window can be opened."""
    if sys.platform.startswith(("linux", "freebsd", "openbsd", "netbsd")):
        if not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
            raise DisplayUnavailable(
                "--render-live needs a display, but neither DISPLAY nor WAYLAND_DISPLAY is set "
                "(on a headless machine use --save-video instead)"
            )
    try:
        import cv2  # noqa: F401
    except ImportError:
        raise DisplayUnavailable("--render-live needs OpenCV: pip install opencv-python") from None
    global _DISPLAY_OK
    if _DISPLAY_OK:
        return
    # OpenCV's GUI backends abort the whole process when the display cannot be opened, so
    # try it in a child process first.
    import subprocess

    probe = (
        "import cv2, numpy as np; cv2.namedWindow('mosnav-probe'); "
        "cv2.imshow('mosnav-probe', np.zeros((8, 8, 3), np.uint8)); cv2.waitKey(1); "
        "cv2.destroyAllWindows()"
    )
    try:
        res = subprocess.run(
            [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60
        )
    except subprocess.TimeoutExpired:
        raise DisplayUnavailable("--render-live: opening an OpenCV window timed out") from None
    if res.returncode != 0:
        lines = [ln.strip() for ln in (res.stderr or "").splitlines() if ln.strip()]
        why = lines[0][:160] if lines else f"exit status {res.returncode}"
        shown = os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY") or "the display"
        raise DisplayUnavailable(
            f"--render-live could not open an OpenCV window on {shown} ({why}); on a headless "
            "machine use --save-video instead"
        )
    _DISPLAY_OK = True


class LiveViewer:
    """An OpenCV window showing what the agent sees; ``read_key`` serves the human agent."""

    WINDOW = "mosnav-eval"

    def __init__(self) -> None:
        check_display()
        import cv2

        self._cv2 = cv2
        try:
            cv2.namedWindow(self.WINDOW, cv2.WINDOW_AUTOSIZE)
        except cv2.error as exc:
            raise DisplayUnavailable(
                f"--render-live could not open an OpenCV window ({' '.join(str(exc).split())[:160]}); "
                "opencv-python-headless has no GUI: install opencv-python"
            ) from None

    def show(self, frame: np.ndarray) -> None:
        self._cv2.imshow(self.WINDOW, np.ascontiguousarray(frame[..., ::-1]))
        self._cv2.waitKey(1)

    def read_key(self) -> str:
        code = self._cv2.waitKey(0)
        return "" if code < 0 else chr(code & 0xFF)

    def close(self) -> None:
        try:
            self._cv2.destroyWindow(self.WINDOW)
        except Exception:
            pass
