import { defineCommand, EXIT } from '../../command.js';
import { DRILL_OPTIONS, drillCommand } from './index.js';
import { drillJunit, drillText } from './text.js';

export const drill = defineCommand({
  name: 'drill',
  description: 'run the duplicate-execution drill against the loopback sandboxes (never live systems)',
  options: DRILL_OPTIONS,
  async run({ io, json, color, errTTY }, o) {
    const machine = o.json || o.reporter === 'junit';
    const sink =
      !machine || errTTY
        ? { write: (t: string) => (errTTY ? process.stderr.write(t) : io.err(t.replace(/\n$/, ''))), tty: errTTY }
        : null;
    // Ctrl-C: say so, finish the scenario in flight and remove the temporary ledgers (a second Ctrl-C stops at once).
    const abort = new AbortController();
    const interrupt = () => {
      io.err(
        '\nretrysafe: interrupted: stopping after the current scenario and removing the temporary ledgers (Ctrl-C again to stop at once)',
      );
      abort.abort();
    };
    process.once('SIGINT', interrupt);
    const report = await drillCommand({ ...o, signal: abort.signal }, sink).finally(() =>
      process.off('SIGINT', interrupt),
    );
    if (o.json) json(report);
    else if (o.reporter === 'junit') io.out(drillJunit(report));
    else io.out(drillText(report, color, o.details === true));
    return report.ok ? EXIT.ok : EXIT.failed;
  },
});
