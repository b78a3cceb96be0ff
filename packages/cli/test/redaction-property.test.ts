import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { AdapterV1, DrillFault } from '@retrysafe/contract';
import { createRunner, exportReceiptsJsonl, jsonlHandoffSink, type LogEntry } from '@retrysafe/core';
import { createSqliteLedger } from '@retrysafe/ledger-sqlite';
import { createDrillClock, startFaultProxy, wrapAdapter } from '@retrysafe/testkit';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { handoffsText, ledgerHandoffs } from '../src/commands/ledger/handoffs/index.js';
import { ledgerLs, lsTable } from '../src/commands/ledger/ls/index.js';
import { ledgerShow, showText } from '../src/commands/ledger/show/index.js';
import { loadAdapters } from '../src/registry.js';
import { tempDir } from './helpers.js';

// The redaction property (issue 18): a canary of any detected kind, placed anywhere a caller, a
// provider or an adapter can put text — a params value, a secret-named params key, the run's intent
// option, a provider's error body, an adapter's error message — never appears in any artefact:
// RunResult (all but the provider's own `result`), a thrown error, receipts (the JSONL export), the
// handoff JSONL, log lines, the ledger rows other than the params and result it keeps on purpose, and
// what `retrysafe ledger ls/show/handoffs` print (text and JSON). Over every adapter's sandbox.

const alnum = (n: number) => fc.stringMatching(new RegExp(`^[A-Za-z0-9]{${n}}$`));
const upper = (n: number) => fc.stringMatching(new RegExp(`^[A-Z0-9]{${n}}$`));
const luhn = fc.array(fc.integer({ min: 0, max: 9 }), { minLength: 15, maxLength: 15 }).map((d) => {
  const digits = [4, ...d.slice(1)];
  let sum = 0;
  for (let i = 0; i < digits.length; i++) {
    let n = digits[digits.length - 1 - i]!;
    if (i % 2 === 0) n = n * 2 > 9 ? n * 2 - 9 : n * 2;
    sum += n;
  }
  return digits.join('') + String((10 - (sum % 10)) % 10);
});

/** A canary: the text placed, and the secret part that must never show up. */
interface Canary {
  readonly kind: string;
  readonly text: string;
  readonly needle: string;
}
const plainCanary: fc.Arbitrary<Canary> = fc.oneof(
  upper(16).map((s) => ({ kind: 'aws', text: `AKIA${s}`, needle: `AKIA${s}` })),
  fc.stringMatching(/^[A-Za-z0-9_-]{35}$/).map((s) => ({ kind: 'google', text: `AIza${s}`, needle: `AIza${s}` })),
  fc
    .tuple(fc.constantFrom('sk_live_', 'rk_live_', 'sk_test_'), alnum(24))
    .map(([p, s]) => ({ kind: 'stripe', text: p + s, needle: s })),
  alnum(32).map((s) => ({ kind: 'whsec', text: `whsec_${s}`, needle: s })),
  fc.tuple(alnum(8), alnum(14)).map(([u, p]) => {
    const b64 = Buffer.from(`${u}:${p}`).toString('base64');
    return { kind: 'basic', text: `Basic ${b64}`, needle: b64 };
  }),
  alnum(28).map((s) => ({ kind: 'bearer', text: `Bearer ${s}`, needle: s })),
  fc
    .tuple(alnum(8), alnum(14))
    .map(([u, p]) => ({ kind: 'url-userinfo', text: `https://${u}:${p}@db.internal.test/x`, needle: p })),
  luhn.map((n) => ({ kind: 'card', text: n, needle: n })),
  fc
    .tuple(
      fc.constantFrom('xoxb-1234-5678-', 'ghp_', 'github_pat_11AB_', 're_AbCd1234_', 'pat-na1-0123abcd-'),
      alnum(24),
    )
    .map(([p, s]) => ({ kind: `token ${p}`, text: p + s, needle: s })),
  alnum(24).map((s) => ({
    kind: 'webhook URL',
    text: `https://hooks.slack.com/services/T0ABCDEF1/B0ABCDEF2/${s}`,
    needle: s,
  })),
  fc
    .tuple(fc.stringMatching(/^[a-z]{10}$/), fc.stringMatching(/^[a-z]{6}$/))
    .map(([l, d]) => ({ kind: 'email', text: `${l}@${d}.example`, needle: `${l}@${d}` })),
  fc
    .tuple(
      fc.constantFrom('passwort', 'password', 'api_key', 'x-auth-token', 'dbPassword', 'пароль', 'contraseña'),
      alnum(18),
    )
    .map(([k, v]) => ({ kind: `free-text ${k}`, text: `${k}=${v}`, needle: v })),
  // A JSON body echoed inside a JSON string, as a provider's error may quote the request.
  fc
    .tuple(fc.constantFrom('password', 'apiKey', 'client_secret', 'Authorization'), alnum(18))
    .map(([k, v]) => ({ kind: `JSON-escaped ${k}`, text: `{\\"${k}\\":\\"${v}\\"}`, needle: v })),
);
// Each also as a request URL echoes it, percent-escaped.
const canary: fc.Arbitrary<Canary> = fc
  .tuple(plainCanary, fc.boolean())
  .map(([c, escaped]) =>
    escaped ? { kind: `${c.kind}, percent-escaped`, text: encodeURIComponent(c.text), needle: c.needle } : c,
  );

type Placement = 'param-value' | 'param-key' | 'intent' | 'error-body' | 'adapter-error';
const placement = fc.constantFrom<Placement>('param-value', 'param-key', 'intent', 'error-body', 'adapter-error');
const SECRET_KEYS = [
  'passwort',
  'apiToken',
  'X-Auth-Token',
  'dbPassword',
  'credentials',
  'пароль',
  'contraseña',
  'cvc',
  'pin',
  'bearer',
  'ssn',
  'passphrase',
];

/** The params with the canary appended to one string leaf (or a `note` field when there is none). */
function plant(params: unknown, text: string, pick: number): unknown {
  const leaves: (string | number)[][] = [];
  const find = (v: unknown, path: (string | number)[]) => {
    if (typeof v === 'string') leaves.push(path);
    else if (Array.isArray(v)) v.forEach((x, i) => find(x, [...path, i]));
    else if (v && typeof v === 'object') for (const [k, x] of Object.entries(v)) find(x, [...path, k]);
  };
  const copy = structuredClone(params) as Record<string, unknown>;
  find(copy, []);
  if (leaves.length === 0) return { ...copy, note: `see ${text}` };
  const path = leaves[pick % leaves.length]!;
  let at: Record<string | number, unknown> = copy;
  for (const p of path.slice(0, -1)) at = at[p] as Record<string | number, unknown>;
  const last = path[path.length - 1]!;
  at[last] = `${String(at[last])} ${text}`;
  return copy;
}

/** A provider error body with the canary in every string it holds. */
function taint(body: unknown, text: string): unknown {
  if (typeof body === 'string') return `${body} (${text})`;
  if (Array.isArray(body)) return body.map((x) => taint(x, text));
  if (body && typeof body === 'object')
    return Object.fromEntries(Object.entries(body).map(([k, v]) => [k, taint(v, text)]));
  return body;
}

function throwing(inner: AdapterV1, text: string): AdapterV1 {
  return wrapAdapter(inner, {
    doExecute: async () => {
      throw new Error(`socket closed while sending for ${text}`);
    },
    doLookup: async () => {
      throw new Error(`lookup failed: upstream said ${text}`);
    },
  });
}

const entries = await loadAdapters();
const cases = entries.flatMap((e) =>
  e.drills.flatMap((d) => Object.keys(d.operations).map((op) => ({ drill: d, op }))),
);
let runNo = 0;

describe('redaction property: canaries never reach an artefact, over every adapter sandbox', () => {
  it('covers every adapter', () => {
    expect(new Set(entries.map((e) => e.name))).toEqual(
      new Set(['sandbox', 'stripe', 'msgraph', 'hubspot', 'http', 'resend', 'github', 'slack']),
    );
    expect(cases.length).toBeGreaterThanOrEqual(8);
  });

  for (const { drill, op } of cases) {
    it(`${drill.name} ${op}`, { timeout: 120_000 }, async () => {
      const spec = drill.operations[op]!;
      await fc.assert(
        fc.asyncProperty(
          canary,
          placement,
          fc.nat(50),
          fc.constantFrom(...SECRET_KEYS),
          async (c, where, pick, secretKey) => {
            const dir = tempDir(`redact-${++runNo}`);
            const clock = createDrillClock();
            const sandbox = await drill.startSandbox({ clock });
            const permanent = spec.faults.permanent as Extract<DrillFault, { kind: 'status' }>;
            const fault: DrillFault =
              where === 'error-body' ? { ...permanent, body: taint(permanent.body, c.text) } : 'pass';
            const proxy = await startFaultProxy({ target: sandbox.url, faults: () => fault });
            const inner = await drill.createAdapter({ baseUrl: proxy.url, timeoutMs: drill.timeoutMs ?? 2000 });
            const adapter = where === 'adapter-error' ? throwing(inner, c.text) : inner;
            const dbPath = join(dir, 'ledger.db');
            const packets = join(dir, 'handoffs.jsonl');
            const logs: LogEntry[] = [];
            const ledger = createSqliteLedger({ path: dbPath });
            const runner = createRunner({
              ledger,
              clock,
              logger: (e) => logs.push(e),
              handoff: jsonlHandoffSink(packets),
              policy: { maxAttempts: 2, maxElapsedMs: 60_000 },
            });
            const base = spec.params(pick) as Record<string, unknown>;
            const params =
              where === 'param-value'
                ? plant(base, c.text, pick)
                : where === 'param-key'
                  ? { ...base, [secretKey]: c.text }
                  : base;
            const artefacts: string[] = [];
            try {
              try {
                const r = await runner.run(adapter, op, {
                  params,
                  ...(where === 'intent' ? { intent: { ...base, ref: c.text } } : {}),
                });
                const { result: _kept, ...shown } = r as { result?: unknown };
                artefacts.push(JSON.stringify(shown));
              } catch (e) {
                artefacts.push(String(e), JSON.stringify(e), (e as Error).stack ?? '');
              }
              artefacts.push(await exportReceiptsJsonl(ledger));
              artefacts.push(JSON.stringify((await ledger.list()).map(({ params: _p, result: _r, ...row }) => row)));
            } finally {
              await ledger.close();
              await adapter.close?.();
              await proxy.close();
              await sandbox.close();
            }
            artefacts.push(JSON.stringify(logs), existsSync(packets) ? readFileSync(packets, 'utf8') : '');
            const rows = await ledgerLs({ db: dbPath });
            artefacts.push(lsTable(rows), JSON.stringify(rows));
            for (const row of rows) {
              const shown = await ledgerShow({ db: dbPath }, row.businessOperationId);
              artefacts.push(JSON.stringify(shown), shown ? showText(shown) : '');
            }
            const handoffs = await ledgerHandoffs({ db: dbPath });
            artefacts.push(handoffsText(handoffs), JSON.stringify(handoffs));
            const all = artefacts.join('\n');
            const needle = [c.needle, encodeURIComponent(c.needle)].find((n) => all.includes(n));
            if (needle !== undefined) {
              const line = all.split('\n').find((l) => l.includes(needle))!;
              throw new Error(
                `${c.kind} canary placed as ${where} leaked: …${line.slice(Math.max(0, line.indexOf(needle) - 160), line.indexOf(needle) + 60)}…`,
              );
            }
          },
        ),
        { numRuns: 12, seed: 18 },
      );
    });
  }
});
