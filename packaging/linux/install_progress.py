"""The first-run install window of the Linux launcher: runs the install script and shows that it is working.

It runs under the system's ``python3`` before the app's environment exists, so it uses only the standard
library (Tk through ``tkinter``). It shows a busy bar, the current phase ("Downloading torch…") and the last
lines of the installer's output, writes everything to a log file, and offers Cancel. On failure the window stays
open with the end of the log so the user can see why.

Usage:
    install_progress.py LOG_FILE COMMAND [ARG...]   run COMMAND (the install) with the window
    install_progress.py --askpass PROMPT            ask for a password (sudo's SUDO_ASKPASS helper)

Exit status: the command's own status on success or failure, 2 when cancelled, 3 when no window can be opened
(no display, or tkinter is not installed: the launcher then falls back to a terminal or a notification).
"""

from __future__ import annotations

import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time

NO_WINDOW = 3
CANCELLED = 2
TAIL_LINES = 400

# pip's output, read for a one-line summary of what is happening now.
PHASES = [
    (re.compile(r"^Installing system packages:(.*)"), "Installing system packages:{0}"),
    (re.compile(r"^Creating the environment"), "Creating the app's Python environment…"),
    (re.compile(r"^\s*Collecting ([A-Za-z0-9_.\-]+)"), "Downloading {0}…"),
    (re.compile(r"^\s*Downloading ([^\s]+)"), "Downloading {0}…"),
    (re.compile(r"^\s*Building (wheel|editable)"), "Building AllTalk GUI…"),
    (re.compile(r"^Installing collected packages"), "Installing the packages (the longest part, several minutes)…"),
    (re.compile(r"^Successfully installed"), "Installed. Starting AllTalk GUI…"),
]


def open_tk():
    """A Tk root window, or None when tkinter or a display is missing."""
    try:
        import tkinter
    except ImportError:
        return None
    try:
        return tkinter.Tk(className="alltalk-gui")
    except tkinter.TclError:  # no $DISPLAY, or it cannot be opened
        return None


def askpass(prompt: str) -> int:
    """Show a password box; print the password for sudo (exit 1 when the user cancels)."""
    root = open_tk()
    if root is None:
        return 1
    from tkinter import simpledialog

    root.withdraw()
    answer = simpledialog.askstring("AllTalk GUI set-up", prompt or "Password:", show="•", parent=root)
    root.destroy()
    if answer is None:
        return 1
    print(answer)
    return 0


class InstallWindow:
    def __init__(self, root, log_path: str, command: list[str]) -> None:
        import tkinter as tk
        from tkinter import ttk

        self.root, self.log_path, self.command = root, log_path, command
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.process: subprocess.Popen | None = None
        self.status: int | None = None
        self.cancelled = False

        root.title("Installing AllTalk GUI")
        icon = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "resources", "icons",
                            "alltalk-gui-64.png")
        if os.path.exists(icon):
            self.icon = tk.PhotoImage(file=icon)  # kept on self: Tk drops images Python no longer references
            root.iconphoto(True, self.icon)
        root.geometry("640x400")
        root.minsize(480, 300)
        root.protocol("WM_DELETE_WINDOW", self.cancel)
        frame = ttk.Frame(root, padding=14)
        frame.pack(fill="both", expand=True)
        ttk.Label(frame, text="Setting up AllTalk GUI for its first start", font=("TkDefaultFont", 13, "bold")).pack(
            anchor="w")
        ttk.Label(frame, wraplength=600, justify="left", text=(
            "This downloads and installs PyTorch, Qt and the speech models' code into the app's own folder (a few "
            "GB). It takes several minutes; later starts are immediate.")).pack(anchor="w", pady=(4, 10))
        self.phase = tk.StringVar(value="Starting…")
        ttk.Label(frame, textvariable=self.phase).pack(anchor="w")
        self.bar = ttk.Progressbar(frame, mode="indeterminate")
        self.bar.pack(fill="x", pady=6)
        self.bar.start(12)
        self.output = tk.Text(frame, height=10, wrap="none", font=("TkFixedFont", 9), state="disabled")
        self.output.pack(fill="both", expand=True)
        buttons = ttk.Frame(frame)
        buttons.pack(fill="x", pady=(10, 0))
        self.button = ttk.Button(buttons, text="Cancel", command=self.cancel)
        self.button.pack(side="right")
        home = os.path.expanduser("~")
        shown = "~" + log_path[len(home):] if home != "/" and log_path.startswith(home + os.sep) else log_path
        ttk.Label(buttons, text=f"Log: {shown}", wraplength=500).pack(side="left")

    def start(self) -> None:
        env = dict(os.environ, PYTHONUNBUFFERED="1", PIP_PROGRESS_BAR="off")
        self.process = subprocess.Popen(self.command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                        stdin=subprocess.DEVNULL, text=True, bufsize=1, env=env,
                                        start_new_session=True)  # its own group, so Cancel stops pip too
        threading.Thread(target=self._read, daemon=True).start()
        self.root.after(100, self._poll)

    def _read(self) -> None:
        assert self.process is not None and self.process.stdout is not None
        with open(self.log_path, "a", encoding="utf-8") as log:
            log.write(f"--- {time.strftime('%Y-%m-%d %H:%M:%S')} {' '.join(self.command)}\n")
            for line in self.process.stdout:
                log.write(line)
                log.flush()
                self.lines.put(line.rstrip("\n"))
        self.status = self.process.wait()
        self.lines.put(None)

    def _poll(self) -> None:
        finished = False
        new: list[str] = []
        while True:
            try:
                line = self.lines.get_nowait()
            except queue.Empty:
                break
            if line is None:
                finished = True
                break
            new.append(line)
        if new:
            self._append(new)
        if finished:
            self._finish()
        else:
            self.root.after(100, self._poll)

    def _append(self, lines: list[str]) -> None:
        for line in lines:
            for pattern, template in PHASES:
                match = pattern.match(line)
                if match:
                    self.phase.set(template.format(*match.groups()))
                    break
        self.output.configure(state="normal")
        self.output.insert("end", "\n".join(lines) + "\n")
        excess = int(self.output.index("end-1c").split(".")[0]) - TAIL_LINES
        if excess > 0:
            self.output.delete("1.0", f"{excess}.0")
        self.output.see("end")
        self.output.configure(state="disabled")

    def _finish(self) -> None:
        self.bar.stop()
        if self.cancelled:
            self.status = CANCELLED
            self.root.destroy()
        elif self.status == 0:
            self.root.destroy()
        else:
            self.bar.configure(mode="determinate", value=0)
            self.phase.set(f"The installation failed (exit status {self.status}). The end of the log is below; "
                           "fix the cause and start AllTalk GUI again.")
            self.button.configure(text="Close", command=self.root.destroy)

    def cancel(self) -> None:
        if self.process is None or self.process.poll() is not None:
            self.root.destroy()
            return
        self.cancelled = True
        self.phase.set("Cancelling…")
        os.killpg(self.process.pid, signal.SIGTERM)


def main(argv: list[str]) -> int:
    if len(argv) >= 1 and argv[0] == "--askpass":
        return askpass(" ".join(argv[1:]))
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 64
    root = open_tk()
    if root is None:
        return NO_WINDOW
    window = InstallWindow(root, argv[0], argv[1:])
    print("progress window opened", flush=True)  # the launcher's tests look for this line
    window.start()
    root.mainloop()
    return window.status if window.status is not None else CANCELLED


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
