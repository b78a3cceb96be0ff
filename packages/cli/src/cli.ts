import { Command, CommanderError, Option } from 'commander';
import { RetrysafeError } from '@retrysafe/contract';
import { cardsCommand } from './commands/cards.js';
import { demoCommand } from './commands/demo.js';
import { drillCommand, drillTable } from './commands/drill.js';
import { ledgerHandoffs, ledgerLs, ledgerResolve, ledgerShow, lsTable } from './commands/ledger.js';
import { UsageError } from './registry.js';
import { paint } from './output.js';

export const EXIT = { ok: 0, failed: 1, usage: 2 } as const;

export interface Io {
  readonly out: (text: string) => void;
  readonly err: (text: string) => void;
}

const defaultIo: Io = { out: (t) => process.stdout.write(t.endsWith('\n') ? t : t + '\n'), err: (t) => process.stderr.write(t.endsWith('\n') ? t : t + '\n') };

const collect = (v: string, prev: string[] = []) => [...prev, ...v.split(',').map((s) => s.trim()).filter(Boolean)];

/** Runs the CLI with `argv` (without node and script) and returns the exit code; never calls process.exit. */
export async function main(argv: readonly string[], io: Io = defaultIo): Promise<number> {
  let code: number = EXIT.ok;
  const json = (value: unknown) => io.out(JSON.stringify(value, null, 2));
  const program = new Command('retrysafe')
    .description('Perform state-changing operations at most once: drills, cards, ledger and handoffs.')
    .exitOverride()
    .configureOutput({ writeOut: (s) => io.out(s), writeErr: (s) => io.err(s) })
    .showHelpAfterError();

  program
    .command('drill')
    .description('run the duplicate-execution drill against the loopback sandboxes (never live systems)')
    .addOption(new Option('--adapter <name>', 'only this adapter (repeatable or comma-separated)').argParser(collect))
    .addOption(new Option('--scenario <id>', 'only this scenario (repeatable or comma-separated)').argParser(collect))
    .addOption(new Option('--operation <name>', 'only this operation (repeatable or comma-separated)').argParser(collect))
    .option('--seed <n>', 'seed of the runner jitter', (v) => Number(v), 1)
    .option('--out <dir>', 'where receipts, summary.json and report.html go', '.drill')
    .option('--json', 'print the results as JSON')
    .action(async (o) => {
      const report = await drillCommand(o, o.json ? () => {} : (line) => io.err(line));
      if (o.json) json(report);
      else io.out(drillTable(report));
      code = report.ok ? EXIT.ok : EXIT.failed;
    });

  program
    .command('cards')
    .description('print retry safety cards; --write regenerates docs/cards, --check fails on drift or unlisted unknowns')
    .addOption(new Option('--adapter <name>', 'only this adapter').argParser(collect))
    .addOption(new Option('--format <fmt>', 'md or json').choices(['md', 'json']))
    .option('--check', 'fail when docs/cards is out of date or a card is invalid')
    .option('--write', 'regenerate docs/cards')
    .option('--dir <dir>', 'the cards folder', 'docs/cards')
    .option('--json', 'same as --format json; with --check, the problems as JSON')
    .action(async (o) => {
      const r = await cardsCommand(o);
      if (o.check || o.write) {
        if (o.json) json({ ok: r.ok, problems: r.problems, written: r.written, cards: r.cards.length });
        else {
          for (const w of r.written) io.out(`wrote ${w}`);
          for (const p of r.problems) io.err(`${paint('red', '✗')} ${p.file}: ${p.problem}`);
          if (o.check) io.out(r.ok ? `${r.cards.length} cards up to date` : `${r.problems.length} problem(s) in docs/cards`);
        }
      } else io.out(r.output);
      code = r.ok ? EXIT.ok : EXIT.failed;
    });

  const ledger = program.command('ledger').description('inspect the ledger and resolve handoffs (SQLite file or postgres:// URL)');
  const target = (c: Command) => c.option('--db <path|url>', 'SQLite file or postgres:// URL (default: the config\'s ledger, else ./retrysafe.db)').option('--config <file>', 'retrysafe config (JSON/YAML)').option('--json', 'JSON output');
  target(ledger.command('ls').description('list operations').addOption(new Option('--state <state>', 'only these states').argParser(collect)).option('--limit <n>', 'at most n', (v) => Number(v), 100)).action(async (o) => {
    const rows = await ledgerLs(o);
    if (o.json) json(rows);
    else io.out(lsTable(rows));
  });
  target(ledger.command('show').argument('<id>', 'business-operation id').description('one operation with its receipts')).action(async (id: string, o) => {
    const r = await ledgerShow(o, id);
    if (!r) {
      io.err(`no operation ${id}`);
      code = EXIT.failed;
      return;
    }
    if (o.json) json(r);
    else {
      io.out(Object.entries(r.record).filter(([k]) => k !== 'handoff').map(([k, v]) => `${k.padEnd(20)} ${typeof v === 'object' && v !== null ? JSON.stringify(v) : String(v)}`).join('\n'));
      if (r.record.handoff) io.out(`\nhandoff: ${r.record.handoff.reason} — ${r.record.handoff.explanation}\nsafe next actions:\n${r.record.handoff.safeNextActions.map((a) => `  ${a.safe ? '✓' : '✗'} ${a.action}: ${a.why}`).join('\n')}`);
      io.out(`\nreceipts:\n${r.receipts.map((x) => `  #${x.seq} ${x.startedAt} ${x.kind} → ${x.outcome ?? '—'}: ${x.decision.action} (${x.decision.reason})${x.status ? ` HTTP ${x.status}` : ''}`).join('\n')}`);
    }
  });
  target(ledger.command('handoffs').description('operations waiting for a person')).action(async (o) => {
    const rows = await ledgerHandoffs(o);
    if (o.json) json(rows);
    else if (rows.length === 0) io.out('No handoffs.');
    else for (const r of rows) io.out(`${r.businessOperationId}  ${r.operation}  ${r.handoffReason}\n  ${r.explanation}\n  safe: ${r.safeNextActions.filter((a) => a.safe).map((a) => a.action).join(', ')}\n`);
  });
  target(
    ledger
      .command('resolve')
      .argument('<id>', 'business-operation id')
      .description('resolve a handed-off operation: --resume (same provider key), --mark-done <providerRef>, or --abandon')
      .option('--resume', 're-send with the SAME provider key through the configured adapter')
      .option('--mark-done <providerRef>', 'you verified the effect at the provider: record its reference')
      .option('--abandon', 'give the operation up')
      .option('--by <name>', 'who resolved it (default $USER)'),
  ).action(async (id: string, o) => {
    const r = await ledgerResolve(o, id);
    if (o.json) json(r);
    else io.out(r.status === 'resolved' ? `${r.businessOperationId}: ${r.state}${r.providerRef ? ` (${r.providerRef})` : ''}` : `${r.businessOperationId}: ${r.status}${r.status === 'done' ? ` (${r.providerRef ?? 'no ref'})` : r.status === 'handed-off' ? ` again: ${r.packet.reason}` : ''}`);
    code = r.status === 'handed-off' ? EXIT.failed : EXIT.ok;
  });

  program
    .command('demo')
    .description('a scripted agent flow (mail, CRM update, ticket, invoice, a bad charge) against the sandboxes with faults, on SQLite')
    .option('--db <path>', 'SQLite ledger file (default: a new temp file)')
    .option('--json', 'print the report as JSON')
    .action(async (o) => {
      const r = await demoCommand(o, o.json ? () => {} : (line) => io.out(line));
      if (o.json) json(r);
      else io.out(r.ok ? '\nEvery step: exactly one business effect or a handoff with nothing sent twice.' : '\nA step did not hold: see above.');
      code = r.ok ? EXIT.ok : EXIT.failed;
    });

  try {
    await program.parseAsync([...argv], { from: 'user' });
    return code;
  } catch (e) {
    if (e instanceof CommanderError) {
      if (e.code === 'commander.helpDisplayed' || e.code === 'commander.version' || e.code === 'commander.help') return EXIT.ok;
      return EXIT.usage;
    }
    if (e instanceof UsageError || (RetrysafeError.isInstance(e) && ['RETRYSAFE_INVALID_ID', 'RETRYSAFE_CONFIG'].includes(e.code))) {
      io.err(`retrysafe: ${(e as Error).message}`);
      return EXIT.usage;
    }
    io.err(`retrysafe: ${RetrysafeError.isInstance(e) ? e.message : (e as Error).stack ?? String(e)}`);
    return EXIT.failed;
  }
}
