#!/usr/bin/python3
"""A Tk app in Python that uses libopenreplaykit through ctypes (nothing to install beyond
Debian's python3 and python3-tk): it keeps its secret window black in every capture, follows
the capture state, records a replay of its own window and hands the person the preview,
and streams its own window's pictures (in-app capture). Each step prints one JSON line.

    python3 recorder.py --record 3            records 3 s of its window, shows the preview
    python3 recorder.py --share-frames 30     30 pictures of its own windows, with the colour at each one's centre
    options: --socket PATH (replayd's), --library PATH (libopenreplaykit.so.1's)
"""
import argparse
import ctypes
import ctypes.util
import json
import os
import sys
import threading
import time
import tkinter


# ---------------------------------------------------------------- the library's interface

class Error(Exception):
    """A failed call: the status's name (ORK_ERROR_USER_DECLINED ...) and replayd's message."""

    def __init__(self, code, message):
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


class Recording(ctypes.Structure):
    _fields_ = [("id", ctypes.c_char * 120), ("duration", ctypes.c_double), ("frames", ctypes.c_int64)]


class Frame(ctypes.Structure):
    _fields_ = [("width", ctypes.c_int32), ("height", ctypes.c_int32), ("time_ns", ctypes.c_int64),
                ("format", ctypes.c_uint32), ("plane_count", ctypes.c_int32),
                ("planes", ctypes.POINTER(ctypes.c_uint8) * 3), ("strides", ctypes.c_int32 * 3),
                ("plane_heights", ctypes.c_int32 * 3)]


CAPTURED = {1 << 0: "screenRecording", 1 << 1: "broadcast", 1 << 2: "mirroring", 1 << 3: "inAppCapture"}
StateCallback = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_uint32, ctypes.c_void_p)
FrameCallback = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.POINTER(Frame), ctypes.c_void_p)


class OpenReplayKit:
    """libopenreplaykit.so.1, one client of replayd. Every call blocks until replayd answers
    (through the person's consent for the starts); callbacks come on the library's own thread."""

    def __init__(self, socket=None, library=None):
        self.lib = ctypes.CDLL(library or ctypes.util.find_library("openreplaykit") or "libopenreplaykit.so.1")
        self._declare()
        self._callbacks = {}  # ctypes callbacks must outlive their registration
        client = ctypes.c_void_p()
        self._check(self.lib.ork_client_new(socket.encode() if socket else None, ctypes.byref(client), None))
        self.client = client

    def _declare(self):
        lib, client, error = self.lib, ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p)
        lib.ork_version.restype = ctypes.c_char_p
        lib.ork_status_name.restype = ctypes.c_char_p
        lib.ork_error_message.restype = ctypes.c_char_p
        lib.ork_error_message.argtypes = [ctypes.c_void_p]
        lib.ork_error_free.argtypes = [ctypes.c_void_p]
        lib.ork_client_new.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p), error]
        lib.ork_client_free.argtypes = [client]
        lib.ork_capture_state_get.argtypes = [client, ctypes.POINTER(ctypes.c_uint32), error]
        lib.ork_capture_state_watch.argtypes = [client, StateCallback, ctypes.c_void_p, error]
        lib.ork_window_protect.argtypes = [client, ctypes.c_uint32, error]
        lib.ork_recording_start.argtypes = [client, ctypes.c_uint32, ctypes.c_int, error]
        lib.ork_recording_stop.argtypes = [client, ctypes.POINTER(Recording), error]
        lib.ork_recording_show_preview.argtypes = [client, ctypes.c_char_p, error]
        lib.ork_capture_start.argtypes = [client, ctypes.c_int, FrameCallback, ctypes.c_void_p, error]
        lib.ork_capture_stop.argtypes = [client, error]

    def _check(self, status, error=None):
        if status != 0:
            message = self.lib.ork_error_message(error).decode() if error else ""
            if error:
                self.lib.ork_error_free(error)
            raise Error(self.lib.ork_status_name(status).decode(), message)

    def _call(self, function, *arguments):
        error = ctypes.c_void_p()
        self._check(function(self.client, *arguments, ctypes.byref(error)), error)

    @property
    def version(self):
        return self.lib.ork_version().decode()

    def captured(self):
        reasons = ctypes.c_uint32()
        self._call(self.lib.ork_capture_state_get, ctypes.byref(reasons))
        return [name for bit, name in CAPTURED.items() if reasons.value & bit]

    def watch_capture_state(self, function):
        """function(reasons) on the library's thread: now, then at every change."""
        callback = StateCallback(lambda client, reasons, data: function([n for b, n in CAPTURED.items() if reasons & b]))
        self._callbacks["state"] = callback
        self._call(self.lib.ork_capture_state_watch, callback, None)

    def protect(self, window):
        self._call(self.lib.ork_window_protect, window)

    def start_recording(self, window=0, microphone=False):
        self._call(self.lib.ork_recording_start, window, int(microphone))

    def stop_recording(self):
        recording = Recording()
        self._call(self.lib.ork_recording_stop, ctypes.byref(recording))
        return recording.id.decode(), recording.duration, recording.frames

    def show_preview(self, recording_id):
        self._call(self.lib.ork_recording_show_preview, recording_id.encode())

    def start_capture(self, function, fps=30):
        """function(frame) on the library's thread for each picture (a Frame, valid during the call)."""
        callback = FrameCallback(lambda client, frame, data: function(frame.contents) if frame else None)
        self._callbacks["frame"] = callback
        self._call(self.lib.ork_capture_start, fps, callback, None)

    def stop_capture(self):
        self._call(self.lib.ork_capture_stop)

    def close(self):
        """Stops everything; no callback runs once this returns."""
        self.lib.ork_client_free(self.client)
        self._callbacks.clear()


# ----------------------------------------------------------------------------- the app

def report(**fields):
    print(json.dumps(fields, sort_keys=True), flush=True)


def pixel(frame, x, y):
    """Y, U and V of the picture at x, y (screen coordinates: in-app capture's pictures are the
    screen, with everything but the app's own windows black)."""
    if x >= frame.width or y >= frame.height:
        return [0, 0, 0]
    return [frame.planes[0][y * frame.strides[0] + x],
            frame.planes[1][(y // 2) * frame.strides[1] + x // 2],
            frame.planes[2][(y // 2) * frame.strides[2] + x // 2]]


def work(kit, args, window):
    """What the app does with OpenReplayKit, on a thread of its own while Tk draws."""
    if args.share_frames:
        samples, enough = [], threading.Event()

        def on_frame(frame):
            # The centres of the window (at 0,0) and of the secret (at 340,0), both 320x240.
            if len(samples) < args.share_frames:
                samples.append((pixel(frame, 160, 120), pixel(frame, 500, 120)))
                if len(samples) == args.share_frames:
                    enough.set()

        kit.start_capture(on_frame)
        if not enough.wait(60):
            raise Error("timeout", f"only {len(samples)} pictures came in 60 s")
        kit.stop_capture()
        mean = lambda which: [round(sum(s[which][i] for s in samples) / len(samples), 1) for i in range(3)]
        report(event="shared", frames=len(samples), window=mean(0), secret=mean(1))
    if args.record:
        kit.start_recording(window=window)
        report(event="recording")
        time.sleep(args.record)
        recording_id, duration, frames = kit.stop_recording()
        report(event="recorded", id=recording_id, duration=duration, frames=frames)
        kit.show_preview(recording_id)
        report(event="previewShown")


def main():
    parser = argparse.ArgumentParser(description="Example OpenReplayKit app in Python (ctypes).")
    parser.add_argument("--socket", help="replayd's socket (default: as the replay CLI finds it)")
    parser.add_argument("--library", default=os.environ.get("OPENREPLAYKIT_LIBRARY"), help="libopenreplaykit.so.1's path")
    parser.add_argument("--record", type=float, help="record this many seconds of the app's window")
    parser.add_argument("--share-frames", type=int, help="stream this many pictures of the app's own window")
    args = parser.parse_args()

    root = tkinter.Tk()
    root.title("Python recorder")
    root.geometry("320x240+0+0")
    root.configure(background="#0000ff")
    secret = tkinter.Toplevel(root, background="#ff0000")
    secret.title("Python recorder: secret")
    secret.geometry("320x240+340+0")
    root.update()
    # Tk draws inside a frame window of its own: that outer window is the app's window on the screen.
    window, secret_window = int(root.wm_frame(), 16), int(secret.wm_frame(), 16)

    kit = OpenReplayKit(socket=args.socket, library=args.library)
    report(event="window", id=window, secret=secret_window, library=kit.version)
    outcome = {}

    def run():
        try:
            kit.protect(secret_window)
            report(event="protected", id=secret_window)
            kit.watch_capture_state(lambda reasons: report(event="captureState", captured=bool(reasons), reasons=reasons))
            work(kit, args, window)
        except Error as error:
            report(event="error", code=error.code, message=error.message)
            outcome["failed"] = True
        finally:
            kit.close()

    worker = threading.Thread(target=run)
    worker.start()

    def check():
        if worker.is_alive():
            root.after(50, check)
        else:
            root.destroy()

    root.after(50, check)
    root.mainloop()
    worker.join()
    report(event="done")
    sys.exit(3 if outcome.get("failed") else 0)


if __name__ == "__main__":
    main()
