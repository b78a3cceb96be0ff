import { mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createRunner, createSqliteLedger, callbackHandoffSink, type RunResult } from '@retrysafe/core';
import { createDrillClock, seededRandom, startFaultProxy, type FaultScript } from '@retrysafe/testkit';
import type { ConformanceOptions } from '@retrysafe/testkit/conformance';
import type { HandoffPacket } from '@retrysafe/contract';
import { loadAdapters } from '../registry.js';

interface Step {
  readonly title: string;
  readonly why: string;
  readonly adapter: string;
  readonly drill?: string;
  readonly operation: string;
  /** Faults for the agent's first call; the agent then re-issues the same tool call. */
  readonly faults: (d: ConformanceOptions['operations'][string]) => FaultScript;
  /** Whether the agent retries the call (with re-ordered arguments) after the first answer. */
  readonly agentRetries: boolean;
}

const STEPS: readonly Step[] = [
  { title: 'Send a mail (Microsoft Graph sendMail)', why: 'the 202 is lost after Graph accepted the mail; sendMail has no idempotency key, so retrysafe looks in Sent Items instead of resending', adapter: 'msgraph', operation: 'mail.send', faults: () => ['drop-response'], agentRetries: true },
  { title: 'Update a CRM contact (HubSpot PATCH)', why: 'HubSpot answers 429 with a ten-secondly policy; the runner waits as told and retries — a set-value PATCH is idempotent by nature', adapter: 'hubspot', operation: 'contacts.update', faults: (d) => [d.faults.rateLimited ?? { kind: 'status', status: 429, retryAfterS: 2 }], agentRetries: false },
  { title: 'Open a support ticket (HubSpot tickets.create)', why: 'the create response is lost; tickets are not idempotent, so retrysafe reconciles through the unique property carrying the business-operation id', adapter: 'hubspot', operation: 'tickets.create', faults: () => ['drop-response'], agentRetries: true },
  { title: 'Create an invoice (Stripe invoices.create)', why: 'the response is lost after Stripe committed; the same Idempotency-Key replays the stored invoice', adapter: 'stripe', operation: 'invoices.create', faults: () => ['drop-response'], agentRetries: true },
  { title: 'Charge with a bad parameter (Stripe paymentIntents.create)', why: 'Stripe rejects the request (validation): never retried, handed to a person', adapter: 'stripe', operation: 'paymentIntents.create', faults: (d) => [d.faults.permanent], agentRetries: false },
];

export interface DemoStepReport {
  readonly title: string;
  readonly why: string;
  readonly businessOperationId: string;
  readonly status: RunResult['status'];
  readonly adopted: boolean | null;
  readonly providerRecords: number;
  readonly requestsAtProvider: number;
  readonly agentCalls: number;
  readonly sameResultOnRetry: boolean | null;
  readonly timeline: readonly string[];
  readonly handoff: Pick<HandoffPacket, 'reason' | 'explanation' | 'safeNextActions'> | null;
}

export interface DemoReport {
  readonly ok: boolean;
  readonly ledger: string;
  readonly steps: readonly DemoStepReport[];
}

function shuffleKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(shuffleKeys);
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).reverse().map(([k, v]) => [k, shuffleKeys(v)]));
  return value;
}

/** `retrysafe demo`: a scripted agent flow against the loopback sandboxes with faults, on a SQLite ledger. */
export async function demoCommand(opts: { db?: string }, log: (line: string) => void): Promise<DemoReport> {
  const dbPath = opts.db ? resolve(opts.db) : join(mkdtempSync(join(tmpdir(), 'retrysafe-demo-')), 'demo.db');
  mkdirSync(resolve(dbPath, '..'), { recursive: true });
  const adapters = await loadAdapters();
  const steps: DemoStepReport[] = [];
  let i = 1000;
  for (const step of STEPS) {
    const entry = adapters.find((a) => a.name === step.adapter);
    const drill = entry?.drills.find((d) => step.operation in d.operations);
    if (!drill) throw new Error(`demo: adapter ${step.adapter} has no drill setup for ${step.operation}`);
    const op = drill.operations[step.operation]!;
    const clock = createDrillClock();
    const sandbox = await drill.startSandbox({ clock });
    const proxy = await startFaultProxy({ target: sandbox.url, faults: step.faults(op) });
    const ledger = createSqliteLedger({ path: dbPath });
    const packets: HandoffPacket[] = [];
    try {
      const adapter = await drill.createAdapter({ baseUrl: proxy.url, timeoutMs: drill.timeoutMs ?? 400 });
      const runner = createRunner({ ledger, clock, random: seededRandom(7), handoff: callbackHandoffSink((p: HandoffPacket) => void packets.push(p)), ...(drill.policy ? { policy: drill.policy } : {}) });
      log(`\n▶ ${step.title}\n  ${step.why}`);
      const params = op.params(i++);
      const first = await runner.run(adapter, step.operation, { params });
      let second: RunResult | null = null;
      if (step.agentRetries) {
        // The agent did not see an answer it trusted and calls the tool again: new run id, arguments re-ordered.
        second = await runner.run(adapter, step.operation, { params: shuffleKeys(params) });
      }
      const records = await sandbox.count(step.operation);
      const receipts = first.status === 'in-progress' ? [] : first.receipts;
      const t0 = receipts.length ? Date.parse(receipts[0]!.startedAt) : 0;
      const timeline = receipts.map((r) => `+${Date.parse(r.startedAt) - t0} ms ${r.kind} → ${r.outcome ?? '—'}: ${r.decision.action} (${r.decision.reason})`);
      for (const line of timeline) log(`  ${line}`);
      const same = second ? second.status === first.status && second.businessOperationId === first.businessOperationId && (second.status !== 'done' || first.status !== 'done' || JSON.stringify(second.result) === JSON.stringify(first.result)) : null;
      const packet = first.status === 'handed-off' ? first.packet : null;
      log(`  ⇒ ${first.status}${first.status === 'done' ? (first.adopted ? ' (result adopted, not re-created)' : '') : ''}; provider records: ${records}; requests that reached the provider: ${proxy.requests.length}${second ? `; the agent's retry got the same operation back: ${same ? 'yes' : 'NO'}` : ''}`);
      if (packet) log(`  handoff: ${packet.reason} — ${packet.explanation}\n  safe next actions: ${packet.safeNextActions.filter((a) => a.safe).map((a) => a.action).join(', ')}`);
      steps.push({
        title: step.title,
        why: step.why,
        businessOperationId: first.businessOperationId,
        status: first.status,
        adopted: first.status === 'done' ? first.adopted : null,
        providerRecords: records,
        requestsAtProvider: proxy.requests.length,
        agentCalls: second ? 2 : 1,
        sameResultOnRetry: same,
        timeline,
        handoff: packet ? { reason: packet.reason, explanation: packet.explanation, safeNextActions: packet.safeNextActions } : null,
      });
    } finally {
      await ledger.close();
      await proxy.close();
      await sandbox.close();
    }
  }
  const ok = steps.every((s) => (s.status === 'handed-off' ? s.providerRecords === 0 : s.providerRecords === 1) && s.sameResultOnRetry !== false);
  log(`\nLedger: ${dbPath} — inspect it with \`retrysafe ledger ls --db ${dbPath}\``);
  return { ok, ledger: dbPath, steps };
}
