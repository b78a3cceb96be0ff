// The commands' process life: how a signal stops them, and how a second one ends them.
// A terminal that closes hangs up; supervisors stop with SIGTERM, SIGINT or SIGQUIT (supervisord's stopsignal).
const SIGNALS = ['SIGTERM', 'SIGINT', 'SIGHUP', 'SIGQUIT'] as const;

/** Runs `command` with `stop`, which the first stop signal aborts: it stops what it started and returns. That stop is
 * not cut short by another signal's default (a supervisor's, or a host's while we stop), which would leave an upstream
 * running; but a second signal is someone the stop takes too long for: what the command gave `onKill` runs (an upstream
 * is ended at once) and the signal then ends the process as it does by default. The listeners go with the command. */
export async function stoppable<T>(
  command: (stop: AbortSignal, onKill: (end: () => Promise<void>) => void) => Promise<T>,
): Promise<T> {
  const stop = new AbortController();
  const ends: (() => Promise<void>)[] = [];
  let killed: Promise<void> | undefined;
  const off = () => {
    for (const s of SIGNALS) process.off(s, on);
  };
  const on = (signal: NodeJS.Signals) => {
    if (!stop.signal.aborted) return stop.abort(signal);
    off();
    killed = Promise.allSettled(ends.map((end) => end())).then(() => void process.kill(process.pid, signal));
  };
  for (const s of SIGNALS) process.on(s, on);
  try {
    return await command(stop.signal, (end) => ends.push(end));
  } finally {
    off();
    await killed; // a stop that ends first does not turn a forced one into an exit 0
  }
}
