import { readFileSync } from 'node:fs';
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { RetrysafeError } from '@retrysafe/contract';
import { createRedactor } from '@retrysafe/core/internal';
import { cardsCommand } from './commands/cards.js';
import { registerCardsInit } from './commands/cards-init.js';
import { demoCommand, demoSummary } from './commands/demo.js';
import { drillCommand, drillJunit, drillText } from './commands/drill.js';
import { PRUNE_RETENTION_NOTE, RefusedError, handoffsText, ledgerHandoffs, ledgerLs, ledgerPrune, pruneText, ledgerResolve, ledgerResolveAll, ledgerShow, lsTable, resolveAllText, resolveText, showText, STATES, withLedger } from './commands/ledger.js';
import { RECEIPT_KEYS_ENV, exportChains, verifyChains, verifyExportFile, verifyText } from './commands/ledger-chain.js';
import { UsageError } from './registry.js';
import { paint, useColor } from './output.js';

/** 0: everything held · 1: a drill/check/step failed or the command could not complete · 2: bad command line. */
export const EXIT = { ok: 0, failed: 1, usage: 2 } as const;

export interface Io {
  readonly out: (text: string) => void;
  readonly err: (text: string) => void;
  /** Whether stderr is a terminal (progress is redrawn in place there). Default: process.stderr.isTTY. */
  readonly errIsTTY?: boolean;
  /** Colour on stdout. Default: a TTY and NO_COLOR unset (FORCE_COLOR forces it). */
  readonly color?: boolean;
}

const errorScrub = createRedactor();
const line = (t: string) => (t.endsWith('\n') ? t : t + '\n');
const defaultIo: Io = { out: (t) => process.stdout.write(line(t)), err: (t) => process.stderr.write(line(t)) };

const collect = (v: string, prev: string[] = []) => [...prev, ...v.split(',').map((s) => s.trim()).filter(Boolean)];
const integer = (v: string) => {
  if (!/^\d+$/.test(v) || !Number.isSafeInteger(Number(v))) throw new InvalidArgumentError('expected a non-negative integer.');
  return Number(v);
};

function version(): string {
  try {
    return (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }).version;
  } catch {
    return '0.0.0';
  }
}

/** Codes of contract errors that mean "the input on the command line is wrong" (exit 2). */
const USAGE_CODES = ['RETRYSAFE_INVALID_ID', 'RETRYSAFE_CONFIG'];

/** A file-system error (ENOENT, EACCES, ENOTDIR…) as one line naming the path, or null for anything else. */
function fileSystemError(e: unknown): string | null {
  const x = e as NodeJS.ErrnoException | null;
  // a path is what makes it a file-system error (a refused connection has a syscall and a code, but no path)
  if (!x || typeof x !== 'object' || typeof x.code !== 'string' || !/^E[A-Z]+$/.test(x.code) || typeof x.syscall !== 'string' || typeof x.path !== 'string') return null;
  const what: Record<string, string> = { ENOENT: 'no such file or directory', EACCES: 'permission denied', EPERM: 'operation not permitted', ENOTDIR: 'a part of the path is a file, not a directory', EISDIR: 'is a directory', EEXIST: 'already exists', ENOSPC: 'no space left on the device', EROFS: 'read-only file system' };
  return `cannot ${x.syscall} ${x.path}: ${what[x.code] ?? x.code} (${x.code})`;
}

/** Runs the CLI with `argv` (without node and script) and returns the exit code; never calls process.exit. */
export async function main(argv: readonly string[], io: Io = defaultIo): Promise<number> {
  let code: number = EXIT.ok;
  const color = io.color ?? useColor(process.stdout);
  const errTTY = io.errIsTTY ?? (io === defaultIo && Boolean(process.stderr.isTTY));
  const errColor = errTTY && useColor(process.stderr);
  const json = (value: unknown) => io.out(JSON.stringify(value, null, 2));
  const wantsJson = argv.includes('--json');

  const program = new Command('retrysafe')
    .description('Perform state-changing operations at most once: drill the adapters, read their cards, inspect the ledger and resolve handoffs.')
    .version(version(), '-V, --version')
    .exitOverride()
    .configureOutput({ writeOut: (s) => io.out(s), writeErr: (s) => io.err(s), outputError: (s, write) => write(s) })
    .showHelpAfterError('(run with --help for usage)')
    .showSuggestionAfterError()
    .addHelpText(
      'after',
      '\nExit codes: 0 ok · 1 a drill, check or step failed · 2 bad usage (or a file that cannot be read or written).\nColour only on a terminal and never with NO_COLOR set. Every command takes --json.\n\nStart with:  retrysafe demo     (a scripted agent flow on a SQLite ledger)\n             retrysafe drill    (every adapter through lost responses, races and errors)',
    );

  program
    .command('drill')
    .description('run the duplicate-execution drill against the loopback sandboxes (never live systems)')
    .addOption(new Option('--adapter <name>', 'only this adapter (repeatable or comma-separated)').argParser(collect))
    .addOption(new Option('--module <file>', 'also drill the `drills` exported by this file of your own (a new adapter); without --adapter, only it').argParser(collect))
    .addOption(new Option('--scenario <id>', 'only this scenario (repeatable or comma-separated)').argParser(collect))
    .addOption(new Option('--operation <name>', 'only this operation, e.g. customers.create (repeatable or comma-separated)').argParser(collect))
    .option('--seed <n>', 'seed of the runner jitter', integer, 1)
    .option('--config <file>', 'drill the `type: http` adapters of this retrysafe config against their pattern sandboxes; without --adapter, only them')
    .option('--out <dir>', 'where receipts, drill.json, junit.xml and report.html go', '.drill')
    .option('--details', 'print every scenario × operation (default: a summary, and the failing rows when something fails)')
    .addOption(new Option('--reporter <name>', 'text (default) or junit (JUnit XML on stdout; always written to <out>/junit.xml)').choices(['text', 'junit']))
    .option('--json', 'print the report as JSON (progress still goes to stderr on a terminal)')
    .action(async (o) => {
      const machine = o.json || o.reporter === 'junit';
      const showProgress = !machine || errTTY;
      const report = await drillCommand(o, showProgress ? { write: (t) => (errTTY ? process.stderr.write(t) : io.err(t.replace(/\n$/, ''))), tty: errTTY } : null);
      if (o.json) json(report);
      else if (o.reporter === 'junit') io.out(drillJunit(report));
      else io.out(drillText(report, color, o.details === true));
      code = report.ok ? EXIT.ok : EXIT.failed;
    });

  program
    .command('cards')
    .description('print retry safety cards; --write regenerates docs/cards, --check fails on drift or on unknowns not listed as unverified')
    .addOption(new Option('--adapter <name>', 'only this adapter (repeatable or comma-separated)').argParser(collect))
    .addOption(new Option('--module <file>', 'cards of the `drills` exported by this file of your own; without --adapter, only it').argParser(collect))
    .option('--config <file>', 'cards of the `type: http` operations this retrysafe config declares; without --adapter, only them')
    .addOption(new Option('--format <fmt>', 'md or json').choices(['md', 'json']))
    .option('--check', 'fail (exit 1) when docs/cards is out of date or a card is invalid')
    .option('--write', 'regenerate docs/cards from the card objects')
    .option('--dir <dir>', 'the cards folder', 'docs/cards')
    .option('--json', 'same as --format json; with --check/--write, the result as JSON')
    .action(async (o) => {
      const r = await cardsCommand(o);
      if (o.check || o.write) {
        if (o.json) json({ ok: r.ok, dir: r.dir, cards: r.cards.map((c) => c.name), written: r.written, problems: r.problems });
        else {
          for (const w of r.written) io.out(`wrote ${w}`);
          for (const p of r.problems) io.err(`${paint('red', '✗', errColor)} ${p.file}: ${p.problem}`);
          if (o.check) io.out(r.ok ? `${paint('green', '✓', color)} ${r.cards.length} cards in ${r.dir} match the card objects` : `${r.problems.length} problem(s) with the cards in ${r.dir}`);
          else if (r.written.length === 0) io.out(`${r.cards.length} cards in ${r.dir} already up to date`);
        }
      } else {
        io.out(r.output);
        for (const p of r.problems) io.err(`${paint('red', '✗', errColor)} ${p.file}: ${p.problem}`);
      }
      code = r.ok ? EXIT.ok : EXIT.failed;
    });

  registerCardsInit(program.commands.find((c) => c.name() === 'cards')!, { out: io.out, err: io.err, json, setCode: (c) => (code = c) });

  const ledger = program.command('ledger').description('inspect the ledger and resolve handoffs (SQLite file or postgres:// URL)');
  const target = (c: Command) =>
    c
      .option('--db <path|url>', "SQLite file or postgres:// URL (default: the config's ledger, else ./retrysafe.db)")
      .option('--schema <name>', 'PostgreSQL schema (default public)')
      .option('--config <file>', 'retrysafe config (JSON or YAML)')
      .option('--json', 'JSON output');
  target(
    ledger
      .command('ls')
      .description('list operations, newest first')
      .addOption(new Option('--state <state>', `only these states (${STATES.join(', ')})`).argParser(collect))
      .option('--limit <n>', 'at most n', integer, 100),
  ).action(async (o) => {
    const rows = await ledgerLs(o);
    if (o.json) json(rows);
    else io.out(lsTable(rows));
  });
  target(ledger.command('show').argument('<id>', 'business-operation id').description('one operation: state, handoff packet, receipts').option('--show-by', 'show who resolved it as stored (default: a pseudonym)')).action(async (id: string, o) => {
    const r = await ledgerShow(o, id);
    if (!r) {
      if (o.json) json({ ok: false, error: { code: 'RETRYSAFE_NOT_FOUND', message: `no operation ${id} in the ledger` } });
      io.err(`retrysafe: no operation ${id} in the ledger`);
      code = EXIT.failed;
      return;
    }
    if (o.json) json(r);
    else io.out(showText(r, color));
    if (!r.chain.ok) {
      io.err(`retrysafe: the receipt chain of ${id} is broken at receipt #${(r.chain.index ?? 0) + 1}: ${r.chain.reason}`);
      code = EXIT.failed;
    }
  });
  target(
    ledger
      .command('verify')
      .argument('[id]', 'business-operation id')
      .description(`check receipt chains against the rows' anchors (and HMAC keys from ${RECEIPT_KEYS_ENV}); exit 1 on a break`)
      .option('--all', 'every operation in the ledger')
      .option('--file <export.jsonl>', 'an export written by `ledger export`, checked offline (no ledger needed)')
      .option('--allow-unkeyed', `with ${RECEIPT_KEYS_ENV} set: accept receipts written before the key (someone could re-seal as unkeyed; do not leave this on)`),
  ).action(async (id: string | undefined, o) => {
    if ([id !== undefined, o.all === true, o.file !== undefined].filter(Boolean).length !== 1) throw new UsageError('choose one of <id>, --all, --file <export.jsonl>');
    const rows = o.file ? verifyExportFile(o.file, { allowUnkeyed: o.allowUnkeyed }) : await withLedger(o, (l) => verifyChains(l, o.all ? 'all' : [id!], { allowUnkeyed: o.allowUnkeyed }));
    if (o.json) json({ ok: rows.every((r) => r.ok), operations: rows });
    else io.out(verifyText(rows, color));
    code = rows.every((r) => r.ok) ? EXIT.ok : EXIT.failed;
  });
  target(
    ledger
      .command('export')
      .description('receipts as JSON Lines, with one chain-head line per operation so the export verifies offline (ledger verify --file)')
      .option('--out <file>', 'write to this file instead of stdout')
      .addOption(new Option('--state <state>', `only these states (${STATES.join(', ')})`).argParser(collect)),
  ).action(async (o) => {
    const r = await withLedger(o, (l) => exportChains(l, { ...(o.out ? { out: o.out } : {}), ...(o.state ? { states: o.state } : {}) }));
    if (o.out) io.err(`wrote ${r.operations} operation${r.operations === 1 ? '' : 's'} to ${o.out}`);
    else if (r.text) io.out(r.text.trimEnd());
  });
  target(
    ledger
      .command('prune')
      .description('retention: delete closed operations (succeeded, rejected, abandoned) older than a duration, with their receipts; never open or handed-off ones')
      .requiredOption('--older-than <duration>', 'last changed at least this long ago, e.g. 30d, 72h')
      .option('--export <file>', "write the pruned operations' receipts (with chain heads, as `ledger export`) to this new file before deleting them")
      .option('--dry-run', 'count what would be pruned; delete and write nothing')
      .option('--force', "prune below the key retention floor of the cards (you know no repeat of these operations can come)")
      .addOption(new Option('--state <state>', 'only these closed states (succeeded, rejected, abandoned)').argParser(collect))
      .addHelpText('after', `\n${PRUNE_RETENTION_NOTE}`),
  ).action(async (o) => {
    const r = await ledgerPrune(o);
    if (o.json) json(r);
    else io.out(pruneText(r, o.export));
  });
  target(ledger.command('handoffs').description('operations waiting for a person, with their safe next actions')).action(async (o) => {
    const rows = await ledgerHandoffs(o);
    if (o.json) json(rows);
    else io.out(handoffsText(rows, color));
    if (rows.some((r) => r.chainBroken)) code = EXIT.failed;
  });
  target(
    ledger
      .command('resolve')
      .argument('<id>', 'business-operation id')
      .description('resolve a handed-off operation: --resume (same provider key), --mark-done <providerRef>, or --abandon')
      .option('--resume', 're-send with the SAME provider key through the adapter named in --config')
      .option('--mark-done <providerRef>', 'you verified the effect at the provider: record its reference')
      .option('--abandon', 'give the operation up (nothing more is sent)')
      .option('--resend-with <params.json>', 'send corrected params (same intent) as a new revision; only when every attempt is known not applied (needs --config)')
      .option('--force', 'with --resume: resume even though the packet marks it not safe (you checked at the provider)')
      .option('--by <name>', 'who resolved it, for the receipt (default $USER)'),
  ).action(async (id: string, o) => {
    const r = await ledgerResolve(o, id);
    if (o.json) json(r);
    else io.out(resolveText(r, color));
    code = r.status === 'resolved' || r.status === 'done' ? EXIT.ok : EXIT.failed;
  });

  target(
    ledger
      .command('resolve-all')
      .description('resolve every handed-off operation matching the filters (--resume or --abandon); --dry-run shows what would be done')
      .addOption(new Option('--operation <name>', 'only this operation, e.g. stripe.invoices.create (repeatable or comma-separated)').argParser(collect))
      .addOption(new Option('--reason <reason>', 'only this handoff reason, e.g. rejected (repeatable or comma-separated)').argParser(collect))
      .addOption(new Option('--id <id>', 'only these business-operation ids (repeatable or comma-separated)').argParser(collect))
      .option('--resume', 're-send each with the SAME provider key through the adapters named in --config')
      .option('--abandon', 'give each up (nothing more is sent)')
      .option('--force', 'also where the packet marks the action not safe (you checked at the provider)')
      .option('--dry-run', 'list what would be done; send and write nothing')
      .option('--by <name>', 'who resolved them, for the receipts (default $USER)'),
  ).action(async (o) => {
    const r = await ledgerResolveAll(o);
    if (o.json) json(r);
    else io.out(resolveAllText(r, color));
    code = r.ok ? EXIT.ok : EXIT.failed;
  });

  program
    .command('probe')
    .description('count duplicate effects of an MCP tool: identical calls at once and after a timeout, counted through a read tool (in a sandbox you provide)')
    .argument('[server...]', 'after --: the MCP server command to spawn (stdio)')
    .option('--url <url>', 'a streamable HTTP MCP server instead of a command (https, or http on loopback)')
    .requiredOption('--tool <name>', 'the writing tool to probe')
    .option('--args <json>', 'its sample arguments (a JSON object)', '{}')
    .requiredOption('--count-tool <name>', 'a read tool that lists the effects')
    .option('--count-args <json>', 'its arguments (a JSON object)')
    .requiredOption('--count-path <path>', 'path to the list in the read tool\'s answer')
    .option('--match <json>', 'count only items with these values (a JSON object of item path → value)')
    .option('--concurrent <n>', 'identical calls fired at once', integer, 3)
    .option('--timeout-ms <n>', 'client timeout of the call that is abandoned and re-issued', integer, 200)
    .option('--settle-ms <n>', 'wait for late effects before counting', integer, 1500)
    .option('--receipt <file>', 'write the probe receipt (JSON) here')
    .action(async (server: string[], o) => {
      const { runProbe } = await import('@retrysafe/mcp');
      const flags = ['--tool', o.tool, '--args', o.args, '--count-tool', o.countTool, '--count-path', o.countPath, '--concurrent', String(o.concurrent), '--timeout-ms', String(o.timeoutMs), '--settle-ms', String(o.settleMs)];
      for (const [flag, v] of [['--count-args', o.countArgs], ['--match', o.match], ['--receipt', o.receipt], ['--url', o.url]] as const) if (v !== undefined) flags.push(flag, v);
      const exit = await runProbe([...flags, ...(server.length ? ['--', ...server] : [])], (l) => io.out(l)).catch((e: unknown) => {
        throw (e as Error)?.name === 'UsageError' ? new UsageError((e as Error).message) : e;
      });
      code = exit === 0 ? EXIT.ok : EXIT.failed;
    });

  program
    .command('demo')
    .description('a scripted agent flow (mail, CRM update, ticket, invoice, a bad charge) against the sandboxes with faults, on SQLite')
    .option('--db <path>', 'SQLite ledger file (default: a new temp file)')
    .option('--json', 'print the report as JSON')
    .action(async (o) => {
      const r = await demoCommand(o, o.json ? () => {} : (l) => io.out(l), color);
      if (o.json) json(r);
      else io.out(demoSummary(r, color));
      code = r.ok ? EXIT.ok : EXIT.failed;
    });

  try {
    if (argv.length === 0) {
      io.err(program.helpInformation());
      return EXIT.usage;
    }
    await program.parseAsync([...argv], { from: 'user' });
    return code;
  } catch (e) {
    if (e instanceof CommanderError) {
      if (e.code === 'commander.helpDisplayed' || e.code === 'commander.version') return EXIT.ok;
      if (e.code === 'commander.help' && e.exitCode === 0) return EXIT.ok; // `retrysafe help [command]`
      // commander prints its own message; a bare `retrysafe ledger` (help for a missing subcommand) is usage too.
      return EXIT.usage;
    }
    const fsError = fileSystemError(e);
    const usage = fsError !== null || e instanceof UsageError || (RetrysafeError.isInstance(e) && USAGE_CODES.includes(e.code));
    // A driver's or the system's message may quote a credential or an address (issue 18): scrubbed like receipts.
    const message = errorScrub.text(fsError ?? (e instanceof Error ? e.message : String(e)));
    if (wantsJson) json({ ok: false, error: { code: fsError ? 'FILE_SYSTEM' : usage ? 'USAGE' : RetrysafeError.isInstance(e) ? e.code : e instanceof RefusedError ? 'REFUSED' : 'ERROR', message } });
    if (fsError) {
      io.err(`retrysafe: ${message}`);
      return EXIT.usage;
    }
    if (usage) {
      io.err(`retrysafe: ${message}\n(run with --help for usage)`);
      return EXIT.usage;
    }
    // Typed errors carry a message written for the reader; anything else is a bug: show the stack.
    io.err(`retrysafe: ${RetrysafeError.isInstance(e) || e instanceof RefusedError ? message : e instanceof Error ? errorScrub.text(e.stack ?? message) : message}`);
    return EXIT.failed;
  }
}
