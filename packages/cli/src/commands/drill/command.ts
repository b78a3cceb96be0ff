import { defineCommand, EXIT, type Options, type Parsed } from '../../command.js';
import { drillCommand } from './index.js';
import { drillJunit, drillText } from './text.js';

const options = {
  adapter: { argument: '<name>', parse: 'list', description: 'only this adapter' },
  module: {
    argument: '<file>',
    parse: 'list',
    description:
      'also drill the `drills` exported by this file of your own (a new adapter); without --adapter, only it',
  },
  scenario: { argument: '<id>', parse: 'list', description: 'only this scenario' },
  operation: {
    argument: '<name>',
    parse: 'list',
    description: 'only this operation, e.g. customers.create',
  },
  seed: { argument: '<n>', parse: 'integer', default: 1, description: 'seed of the runner jitter' },
  config: {
    argument: '<file>',
    description:
      'drill the `type: http` adapters of this retrysafe config against their pattern sandboxes; without --adapter, only them',
  },
  out: {
    argument: '<dir>',
    default: '.drill',
    description: 'where receipts, drill.json, junit.xml and report.html go',
  },
  details: {
    description: 'print every scenario × operation (default: a summary, and the failing rows when something fails)',
  },
  reporter: {
    argument: '<name>',
    choices: ['text', 'junit'],
    description: 'text (default) or junit (JUnit XML on stdout; always written to <out>/junit.xml)',
  },
  json: { description: 'print the report as JSON (progress still goes to stderr on a terminal)' },
} as const satisfies Options;

export type DrillFlags = Parsed<typeof options>;

export const drill = defineCommand({
  name: 'drill',
  description: 'run the duplicate-execution drill against the loopback sandboxes (never live systems)',
  options,
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
