import { readFileSync } from 'node:fs';
import { Command } from 'commander';
import { COMMANDS, DESCRIPTION, HELP_AFTER } from './cli-config.js';
import { type Context, EXIT, type Io, register } from './command.js';
import { reportError, UsageError } from './errors.js';
import { useColor } from './output.js';

const line = (t: string) => (t.endsWith('\n') ? t : t + '\n');
const defaultIo: Io = { out: (t) => process.stdout.write(line(t)), err: (t) => process.stderr.write(line(t)) };

const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };

/** Runs the CLI with `argv` (without node and script) and returns the exit code; never calls process.exit. */
export async function main(argv: readonly string[], io: Io = defaultIo): Promise<number> {
  let code: number = EXIT.ok;
  const errTTY = io.errIsTTY ?? (io === defaultIo && Boolean(process.stderr.isTTY));
  const json = (value: unknown) => io.out(JSON.stringify(value, null, 2));
  const program = new Command('retrysafe')
    .description(DESCRIPTION)
    .version(pkg.version, '-V, --version')
    .exitOverride()
    .configureOutput({ writeOut: (s) => io.out(s), writeErr: (s) => io.err(s), outputError: (s, write) => write(s) })
    .showHelpAfterError('(run with --help for usage)')
    .showSuggestionAfterError()
    // A command's options belong to it: `cards validate --json` is validate's --json, not the cards list's.
    .enablePositionalOptions()
    .helpCommand(false)
    .addHelpText('after', HELP_AFTER);
  const ctx: Context = {
    io,
    color: io.color ?? useColor(process.stdout.isTTY),
    errColor: errTTY && useColor(process.stderr.isTTY),
    errTTY,
    json,
    print(o, value, text, ok = true) {
      if (o.json) json(value);
      else io.out(text());
      return ok ? EXIT.ok : EXIT.failed;
    },
    help(words) {
      let cmd: Command | undefined = program;
      for (const w of words) cmd = cmd?.commands.find((c) => c.name() === w);
      return cmd?.helpInformation();
    },
  };
  for (const c of COMMANDS) register(program, c, ctx, (n) => (code = n));

  if (argv.length === 0) {
    io.err(program.helpInformation());
    return EXIT.usage;
  }
  try {
    refuseUnknownCommand(program, argv);
    await program.parseAsync([...argv], { from: 'user' });
    return code;
  } catch (e) {
    return reportError(e, io, argv.includes('--json') ? json : null);
  }
}

/** A misspelt command under a group is refused by name: commander alone answers `ledger verfy --help` with the
 * help (exit 0) and `cards vaildate` with "too many arguments". */
function refuseUnknownCommand(program: Command, argv: readonly string[]): void {
  let cmd = program;
  for (const word of argv) {
    // From the first option on, the words may be option values: commander sorts them out.
    if (word.startsWith('-') || word === 'help' || cmd.commands.length === 0) return;
    const next = cmd.commands.find((c) => c.name() === word || c.aliases().includes(word));
    if (!next) {
      cmd.args = [word];
      // commander's own refusal (not in its typings) suggests a spelling; guarded, the throw below refuses without it
      const own = (cmd as unknown as { unknownCommand?: () => never }).unknownCommand;
      if (typeof own === 'function') own.call(cmd);
      throw new UsageError(`unknown command '${word}'`);
    }
    cmd = next;
  }
}
