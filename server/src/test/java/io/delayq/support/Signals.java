package io.delayq.support;

/**
 * Signals Java cannot send by itself: SIGSTOP and SIGCONT freeze and thaw a process (a replica or
 * a redis-server) as a long GC pause or a VM stall does; its sockets stay open, so its peers hang
 * rather than see a reset.
 */
public final class Signals {
    private Signals() {
    }

    public static void stop(long pid) {
        send("-STOP", pid);
    }

    public static void cont(long pid) {
        send("-CONT", pid);
    }

    /** SIGKILL, and waits until the process is gone. */
    public static void kill(long pid) {
        ProcessHandle.of(pid).ifPresent(h -> {
            h.destroyForcibly();
            h.onExit().orTimeout(10, java.util.concurrent.TimeUnit.SECONDS).join();
        });
    }

    private static void send(String signal, long pid) {
        if (pid <= 0) {
            throw new IllegalArgumentException("no process to signal (pid " + pid + ")");
        }
        NetNs.run(true, "kill", signal, Long.toString(pid));
    }
}
