# gdb script written by `rr-lite replay --debug` into the replay session's
# directory (replayer/src/debug.rs fills in the quoted values).
import os
import subprocess

import gdb

RR_LITE = @RR_LITE@
TRACE = @TRACE@
STOP_LINE = @STOP_LINE@
# True when this gdb starts the program; False when it connects to the
# gdbserver `rr-lite replay --gdbserver` runs (`target remote`).
STARTS_PROGRAM = @STARTS_PROGRAM@
# Frames in these libraries are rr-lite's runtime, not the program.
RUNTIME_LIBRARIES = ("librr_lite_rt", "libtsan")

if STARTS_PROGRAM:
    gdb.execute("set startup-with-shell on")
    gdb.execute("set disable-randomization on")
    gdb.execute("set exec-wrapper " + @WRAPPER@)


def in_runtime(frame):
    library = gdb.solib_name(frame.pc()) or ""
    return os.path.basename(library).startswith(RUNTIME_LIBRARIES)


def select_program_frame():
    """Selects the newest frame outside the runtime (the program's code
    that made the event)."""
    frame = gdb.newest_frame()
    while frame is not None and in_runtime(frame):
        frame = frame.older()
    if frame is not None:
        frame.select()


stop_breakpoint = None


def on_new_objfile(event):
    """Sets the stop breakpoint once the runtime is loaded (no pending
    breakpoint message before that)."""
    global stop_breakpoint
    name = os.path.basename(event.new_objfile.filename or "")
    if stop_breakpoint is None and name.startswith(RUNTIME_LIBRARIES):
        stop_breakpoint = gdb.Breakpoint("rr_lite_debug_stop", internal=True)
        stop_breakpoint.silent = True


gdb.events.new_objfile.connect(on_new_objfile)


def on_stop(event):
    hit = getattr(event, "breakpoints", None) or []
    if stop_breakpoint is not None and stop_breakpoint in hit:
        select_program_frame()
        print(STOP_LINE)
        gdb.execute("frame")


gdb.events.stop.connect(on_stop)


def on_exit(event):
    if hasattr(event, "exit_code"):
        print("rr-lite: the replay is over; to replay again, leave gdb and run "
              "`rr-lite replay --debug` again (gdb's `run` would not replay)")


gdb.events.exited.connect(on_exit)


class HideRuntimeFrames:
    """Frame filter: `bt` shows the program's frames, not the runtime's
    hooks it is stopped in (`disable frame-filter global rr-lite-runtime`
    shows them)."""

    def __init__(self):
        self.name = "rr-lite-runtime"
        self.priority = 100
        self.enabled = True
        gdb.frame_filters[self.name] = self

    def filter(self, frames):
        return (f for f in frames if not in_runtime(f.inferior_frame()))


HideRuntimeFrames()


class RrLiteEvent(gdb.Command):
    """rr-lite-event: the selected thread's place in the replay: its next
    event (T:N, as `rr-lite dump` numbers them) and its next sync point."""

    def __init__(self):
        super().__init__("rr-lite-event", gdb.COMMAND_STATUS)

    def invoke(self, argument, from_tty):
        if gdb.selected_thread() is None:
            print("rr-lite-event: no thread selected (is the program running?)")
            return
        # The thread's own counter, read by a call in the selected thread.
        language = gdb.parameter("language")
        gdb.execute("set language c", to_string=True)
        try:
            position = int(gdb.parse_and_eval(
                "((unsigned long (*)(void)) rr_lite_debug_position)()"))
        finally:
            gdb.execute("set language " + language, to_string=True)
        if position == (1 << 64) - 1:
            print("rr-lite-event: the replay does not follow this thread")
            return
        thread, index = position >> 40, position & ((1 << 40) - 1)
        done = subprocess.run(
            [RR_LITE, "__debug-event", TRACE, str(thread), str(index)],
            capture_output=True, text=True)
        print((done.stdout + done.stderr).rstrip())


RrLiteEvent()
if STARTS_PROGRAM:
    gdb.execute("run")
