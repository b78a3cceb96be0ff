import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EXIT, kebab } from '../../command.js';
import { UsageError } from '../../errors.js';
import type { ProbeOptions } from './command.js';

/** The MCP probe's exit codes (0 at most once, 1 duplicates, 3 no effect seen) as the CLI's. */
const VERDICTS: Readonly<Record<number, number>> = { 0: EXIT.ok, 1: EXIT.failed, 3: EXIT.noEffect };

/** The probe with `--json`: the receipt (written to `--receipt`, or to a temp file) is the answer on stdout. */
export async function probeJson(
  o: ProbeOptions,
  server: readonly string[],
  json: (value: unknown) => void,
): Promise<number> {
  const dir = o.receipt ? null : mkdtempSync(join(tmpdir(), 'retrysafe-probe-'));
  const receipt = o.receipt ?? join(dir!, 'probe.json');
  try {
    const code = await probeCommand({ ...o, receipt }, server, () => {});
    json(JSON.parse(readFileSync(receipt, 'utf8')));
    return code;
  } finally {
    if (dir) rmSync(dir, { recursive: true, force: true });
  }
}

/** `retrysafe probe`: the MCP probe with the CLI's exit codes ("no effect seen" judges nothing, so it has its own). */
export async function probeCommand(
  o: ProbeOptions,
  server: readonly string[],
  out: (line: string) => void,
): Promise<number> {
  // The options are the MCP probe's own, by the same names.
  const flags = Object.entries(o)
    .filter(([key, v]) => key !== 'json' && v !== undefined)
    .flatMap(([key, v]) => [`--${kebab(key)}`, String(v)]);
  const { runProbe } = await import('@retrysafe/mcp');
  const exit = await runProbe([...flags, ...(server.length ? ['--', ...server] : [])], out).catch((e: unknown) => {
    throw (e as Error)?.name === 'UsageError' ? new UsageError((e as Error).message) : e;
  });
  return VERDICTS[exit] ?? EXIT.failed;
}
