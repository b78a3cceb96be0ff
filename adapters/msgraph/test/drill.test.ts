// The runner (@retrysafe/core) + the real Graph SDK + the loopback sandbox: lost responses, bounded
// reconciliation, handoff. The runner and the sandbox share a virtual clock, so the lookup window
// and the Sent Items delay cost no wall time.

import type { HandoffPacket } from '@retrysafe/contract';
import {
  createMemoryLedger,
  createRunner,
  createVirtualClock,
  type PolicyOverrides,
  type VirtualClock,
} from '@retrysafe/core';
import type { FaultProxy } from '@retrysafe/testkit';
import { executeContext, operationIdFor } from '@retrysafe/testkit/conformance';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createMsGraphAdapter, type MsGraphAdapter } from '../src/index.js';
import {
  type MsGraphSandbox,
  type MsGraphSandboxOptions,
  type SandboxKind,
  startMsGraphSandbox,
} from '../src/sandbox/index.js';
import { eventParams, mailParams, type NetworkFaults, startGraphFaultProxy, TOKEN, taskParams } from './helpers.js';

let clock: VirtualClock;
let sandbox: MsGraphSandbox;
let proxy: FaultProxy;
let adapter: MsGraphAdapter;
let packets: HandoffPacket[];
const CLIENT_TIMEOUT_MS = 2_000;

/**
 * The sandbox (provider behaviour: `faults` are answers Graph gives) behind the testkit's fault proxy
 * (network faults per kind: a lost response, an answer held past the client's timeout).
 */
async function setup(options: MsGraphSandboxOptions & { network?: NetworkFaults } = {}, policy: PolicyOverrides = {}) {
  const { network = {}, ...sandboxOptions } = options;
  clock = createVirtualClock();
  sandbox = await startMsGraphSandbox({ accessToken: TOKEN, now: () => clock.now(), ...sandboxOptions });
  proxy = await startGraphFaultProxy(sandbox.url, network);
  // generous client timeout: a loaded CI machine must not turn a lookup into "cannot tell"
  adapter = createMsGraphAdapter({ accessToken: TOKEN, baseUrl: `${proxy.url}/`, timeoutMs: CLIENT_TIMEOUT_MS });
  packets = [];
  return createRunner({
    ledger: createMemoryLedger(),
    clock,
    random: () => 0.5,
    policy: { lookupWindowMs: 60_000, ...policy },
    handoff: { send: (p) => void packets.push(p) },
  });
}

afterEach(async () => {
  await proxy?.close();
  await sandbox?.close();
});

/** The second run adopted the first one's effect: one operation, one request, one object at Graph. */
function expectOneEffect(kind: SandboxKind, first: { businessOperationId: string }, second: object) {
  expect(first).toMatchObject({ status: 'done', adopted: false });
  expect(second).toMatchObject({ status: 'done', adopted: true, businessOperationId: first.businessOperationId });
  expect(sandbox.requestCount(kind)).toBe(1);
  expect(sandbox.count(kind)).toBe(1);
}

describe('mail.send: lost sendMail response', () => {
  it('lookup finds the mail in Sent Items ⇒ done, 0 resends, exactly one message', async () => {
    const runner = await setup({ network: { 'mail.send': ['drop-response'] } });
    const r = await runner.run(adapter, 'mail.send', { params: mailParams(1) });
    expect(r).toMatchObject({ status: 'done', adopted: true, attempts: 1, result: { state: 'in-sent-items' } });
    expect(sandbox.requestCount('mail.send')).toBe(1);
    expect(sandbox.count('mail.send')).toBe(1);
    expect(packets).toHaveLength(0);
  });

  it('the mail becomes visible after a delay inside the lookup window ⇒ the runner polls and adopts it, 0 resends', async () => {
    const runner = await setup({ sentItemsDelayMs: 20_000, network: { 'mail.send': ['drop-response'] } });
    const r = await runner.run(adapter, 'mail.send', { params: mailParams(2) });
    expect(r).toMatchObject({ status: 'done', adopted: true, attempts: 1 });
    expect(sandbox.requestCount('mail.lookup')).toBeGreaterThan(1); // polled while "cannot tell"
    expect(sandbox.requestCount('mail.send')).toBe(1);
    expect(sandbox.count('mail.send')).toBe(1);
  });

  it('the mail is not visible within the bounded window ⇒ handoff packet, no resend', async () => {
    const runner = await setup(
      { sentItemsDelayMs: 3_600_000, network: { 'mail.send': ['drop-response'] } },
      { lookupWindowMs: 30_000 },
    );
    const r = await runner.run(adapter, 'mail.send', { params: mailParams(3) });
    expect(r.status).toBe('handed-off');
    expect(sandbox.requestCount('mail.send')).toBe(1); // 0 resends
    expect(sandbox.count('mail.send')).toBe(1); // the one mail Graph did accept
    expect(sandbox.requestCount('mail.lookup')).toBeGreaterThan(0);
    expect(packets).toHaveLength(1);
    const packet = packets[0]!;
    expect(packet.operation).toBe('msgraph.mail.send');
    expect(packet.reason).toBe('lookup-window-exhausted');
    expect(packet.safeNextActions.find((a) => a.action === 'resume')?.safe).toBe(false);
    expect(packet.lastKnown.outcome).toBe('cannot-tell');
    expect(packet.providerKey).toBeNull();
    // no PII in the packet: neither the recipient nor the subject nor the body
    const text = JSON.stringify(packet);
    for (const pii of ['customer3@example.test', 'Invoice 3 reminder', 'Please pay invoice 3'])
      expect(text).not.toContain(pii);
  });

  it('the Sent Items search is throttled (429 + Retry-After) ⇒ the runner waits and searches again, then adopts; 0 resends', async () => {
    const runner = await setup({
      network: { 'mail.send': ['drop-response'] },
      faults: { 'mail.lookup': [{ kind: 'status', status: 429, retryAfterS: 5 }] },
    });
    const r = await runner.run(adapter, 'mail.send', { params: mailParams(11) });
    expect(r).toMatchObject({ status: 'done', adopted: true, attempts: 1 });
    expect(sandbox.requestCount('mail.lookup')).toBe(2);
    expect(sandbox.requestCount('mail.send')).toBe(1);
    expect(clock.sleeps).toContain(5_000);
  });

  it('the answer is held past the client timeout ⇒ unknown ⇒ found by lookup, 0 resends', async () => {
    const runner = await setup({ network: { 'mail.send': [{ kind: 'delay', ms: CLIENT_TIMEOUT_MS * 3 }] } });
    const r = await runner.run(adapter, 'mail.send', { params: mailParams(4) });
    expect(r).toMatchObject({ status: 'done', adopted: true, attempts: 1 });
    expect(sandbox.requestCount('mail.send')).toBe(1);
    expect(sandbox.count('mail.send')).toBe(1);
  });

  it('503 after Graph accepted the mail ⇒ unknown ⇒ found by lookup, 0 resends (where the SDK default would have resent)', async () => {
    const runner = await setup({
      faults: { 'mail.send': [{ kind: 'status', status: 503, retryAfterS: 1, commit: true }] },
    });
    const r = await runner.run(adapter, 'mail.send', { params: mailParams(5) });
    expect(r).toMatchObject({ status: 'done', adopted: true, attempts: 1 });
    expect(sandbox.requestCount('mail.send')).toBe(1);
    expect(sandbox.count('mail.send')).toBe(1);
  });
});

describe('mail.send: definite answers', () => {
  it('429 with Retry-After (throttled before processing) ⇒ one bounded retry after waiting, one mail', async () => {
    const runner = await setup({ faults: { 'mail.send': [{ kind: 'status', status: 429, retryAfterS: 4 }] } });
    const r = await runner.run(adapter, 'mail.send', { params: mailParams(6) });
    expect(r).toMatchObject({ status: 'done', adopted: false, attempts: 2 });
    expect(sandbox.requestCount('mail.send')).toBe(2);
    expect(sandbox.count('mail.send')).toBe(1);
    expect(Math.max(...clock.sleeps)).toBeGreaterThanOrEqual(4_000); // Retry-After honoured (virtual clock)
  });

  it('429 on every try ⇒ exactly maxAttempts POSTs, then handoff, no mail', async () => {
    const runner = await setup(
      { faults: { 'mail.send': () => ({ kind: 'status', status: 429, retryAfterS: 1 }) } },
      { maxAttempts: 3 },
    );
    const r = await runner.run(adapter, 'mail.send', { params: mailParams(7) });
    expect(r.status).toBe('handed-off');
    expect(sandbox.requestCount('mail.send')).toBe(3);
    expect(sandbox.count('mail.send')).toBe(0);
  });

  it('400 from Graph ⇒ one attempt, handed off as rejected', async () => {
    const p = mailParams(8);
    const runner = await setup();
    const r = await runner.run(adapter, 'mail.send', {
      params: { ...p, message: { ...p.message, toRecipients: [{ emailAddress: { address: 'nope' } }] } },
    });
    expect(r.status).toBe('handed-off');
    expect(sandbox.requestCount('mail.send')).toBe(1);
    expect(packets[0]?.reason).toBe('rejected');
    expect(packets[0]?.lastKnown).toMatchObject({ status: 400, code: 'ErrorInvalidRecipients' });
  });

  it('the same intent run twice ⇒ the second run adopts the first, no second POST', async () => {
    const runner = await setup();
    const first = await runner.run(adapter, 'mail.send', { params: mailParams(9) });
    const second = await runner.run(adapter, 'mail.send', { params: mailParams(9) });
    expect(first.status).toBe('done');
    expect(second).toMatchObject({ status: 'done', adopted: true });
    expect(sandbox.requestCount('mail.send')).toBe(1);
  });

  // Graph stores a collection left out of a message as [] (the card's evidence): one mail either way.
  it.each(['ccRecipients', 'bccRecipients', 'replyTo', 'categories'])(
    'the same mail with %s: [] on one run and left out on the next ⇒ one mail, the second run adopts the first',
    async (field) => {
      const runner = await setup();
      const p = mailParams(11);
      const withEmpty = { ...p, message: { ...p.message, [field]: [] } };
      const first = await runner.run(adapter, 'mail.send', { params: withEmpty });
      const second = await runner.run(adapter, 'mail.send', { params: p });
      const third = await runner.run(adapter, 'mail.send', { params: withEmpty });
      expect(first).toMatchObject({ status: 'done', adopted: false });
      expect(second).toMatchObject({ status: 'done', adopted: true });
      expect(third).toMatchObject({ status: 'done', adopted: true });
      expect(second.businessOperationId).toBe(first.businessOperationId);
      expect(sandbox.requestCount('mail.send')).toBe(1);
      expect(sandbox.count('mail.send')).toBe(1);
    },
  );

  /** Mail `n` sent twice, its message with `a` on the first run and `b` on the second. */
  async function twice(runner: Awaited<ReturnType<typeof setup>>, n: number, a: object, b: object) {
    const p = mailParams(n);
    const first = await runner.run(adapter, 'mail.send', { params: { ...p, message: { ...p.message, ...a } } });
    const second = await runner.run(adapter, 'mail.send', { params: { ...p, message: { ...p.message, ...b } } });
    return [first, second] as const;
  }

  // Graph's Create message example sends "importance": "Low" and stores "low" (the card's evidence): one mail.
  it('the same mail with importance Low on one run and low on the next ⇒ one mail, the second run adopts the first', async () => {
    const [first, second] = await twice(await setup(), 13, { importance: 'Low' }, { importance: 'low' });
    expectOneEffect('mail.send', first, second);
  });

  it('another importance is another mail ⇒ two mails', async () => {
    const [first, second] = await twice(await setup(), 14, { importance: 'low' }, { importance: 'high' });
    expect(second.businessOperationId).not.toBe(first.businessOperationId);
    expect(sandbox.count('mail.send')).toBe(2);
  });

  // Graph's Create message example 2 returns a message created without these fields with these values (the card's evidence).
  it.each([
    ['importance', 'Normal'],
    ['isReadReceiptRequested', false],
    ['isDeliveryReceiptRequested', false],
    ['flag', { flagStatus: 'notFlagged' }],
  ])(
    'the same mail with %s spelled as Graph’s default %j on one run and left out on the next ⇒ one mail',
    async (field, value) => {
      const [first, second] = await twice(await setup(), 15, { [field]: value }, {});
      expect(first).toMatchObject({ status: 'done', adopted: false });
      expect(second).toMatchObject({ status: 'done', adopted: true });
      expect(second.businessOperationId).toBe(first.businessOperationId);
      expect(sandbox.requestCount('mail.send')).toBe(1);
    },
  );

  it('a read receipt asked for is not the default ⇒ two mails', async () => {
    const [first, second] = await twice(await setup(), 16, { isReadReceiptRequested: true }, {});
    expect(second.businessOperationId).not.toBe(first.businessOperationId);
    expect(sandbox.count('mail.send')).toBe(2);
  });

  it('a Cc recipient is not the same mail as none ⇒ two mails', async () => {
    const cc = [{ emailAddress: { address: 'boss@example.test' } }];
    const [first, second] = await twice(await setup(), 12, {}, { ccRecipients: cc });
    expect(first).toMatchObject({ status: 'done', adopted: false });
    expect(second).toMatchObject({ status: 'done', adopted: false });
    expect(second.businessOperationId).not.toBe(first.businessOperationId);
    expect(sandbox.count('mail.send')).toBe(2);
  });

  it('receipts carry no recipient, subject or body', async () => {
    const runner = await setup({ network: { 'mail.send': ['drop-response'] } });
    const r = await runner.run(adapter, 'mail.send', { params: mailParams(10) });
    if (r.status !== 'done') throw new Error(`expected done, got ${r.status}`);
    const text = JSON.stringify(r.receipts);
    expect(r.receipts.length).toBeGreaterThan(1);
    for (const pii of ['customer10@example.test', 'Invoice 10 reminder', 'Please pay invoice 10'])
      expect(text).not.toContain(pii);
  });
});

describe('events.create: one meeting slot, spelled as the request or as Graph returns it', () => {
  // Graph's Create event example sends "2017-04-15T12:00:00" and returns "2017-04-15T12:00:00.0000000" (the card's
  // evidence): an agent that copies the time back from Graph names the same slot.
  it('start and end with and without the .0000000 fraction ⇒ one event, the second run adopts the first', async () => {
    const runner = await setup();
    const p = eventParams(3);
    const graphSpelling = (t: { dateTime: string; timeZone: string }) => ({ ...t, dateTime: `${t.dateTime}.0000000` });
    const first = await runner.run(adapter, 'events.create', { params: p });
    const second = await runner.run(adapter, 'events.create', {
      params: { ...p, event: { ...p.event, start: graphSpelling(p.event.start), end: graphSpelling(p.event.end) } },
    });
    expectOneEffect('events.create', first, second);
  });

  it('a start of .5 and of .5000000 (as Graph returns it) ⇒ one event', async () => {
    const runner = await setup();
    const p = eventParams(3);
    const at = (dateTime: string) => ({ ...p, event: { ...p.event, start: { ...p.event.start, dateTime } } });
    const first = await runner.run(adapter, 'events.create', { params: at('2026-12-04T10:00:00.5') });
    const second = await runner.run(adapter, 'events.create', { params: at('2026-12-04T10:00:00.5000000') });
    expect(second).toMatchObject({ status: 'done', adopted: true, businessOperationId: first.businessOperationId });
    expect(sandbox.count('events.create')).toBe(1);
  });

  it.each(['2026-12-04T10:00:01', '2026-12-04T10:00:00.5', '2026-12-04T10:00:00.05'])(
    'a start of %s is another slot than 10:00:00 ⇒ two events',
    async (other) => {
      const runner = await setup();
      const p = eventParams(3);
      const first = await runner.run(adapter, 'events.create', { params: p });
      const second = await runner.run(adapter, 'events.create', {
        params: { ...p, event: { ...p.event, start: { ...p.event.start, dateTime: other } } },
      });
      expect(second.businessOperationId).not.toBe(first.businessOperationId);
      expect(sandbox.count('events.create')).toBe(2);
    },
  );
});

describe('todo.tasks.create: the due date tells two tasks of one title apart', () => {
  const due = (dateTime: string) => ({
    ...taskParams(6),
    task: { title: 'Pay rent', dueDateTime: { dateTime, timeZone: 'UTC' } },
  });
  it('one title due on two dates ⇒ two tasks (the second was refused as a params conflict, never made)', async () => {
    const runner = await setup();
    const first = await runner.run(adapter, 'todo.tasks.create', { params: due('2027-01-01T00:00:00') });
    const second = await runner.run(adapter, 'todo.tasks.create', { params: due('2027-02-01T00:00:00') });
    expect(first).toMatchObject({ status: 'done', adopted: false });
    expect(second).toMatchObject({ status: 'done', adopted: false });
    expect(sandbox.count('todo.tasks.create')).toBe(2);
  });

  it('one due date with and without the .0000000 fraction Graph returns ⇒ one task; no due date is another task', async () => {
    const runner = await setup();
    const first = await runner.run(adapter, 'todo.tasks.create', { params: due('2027-01-01T00:00:00') });
    const again = await runner.run(adapter, 'todo.tasks.create', { params: due('2027-01-01T00:00:00.0000000') });
    const undated = await runner.run(adapter, 'todo.tasks.create', {
      params: { ...taskParams(6), task: { title: 'Pay rent' } },
    });
    expect(again).toMatchObject({ status: 'done', adopted: true, businessOperationId: first.businessOperationId });
    const half = await runner.run(adapter, 'todo.tasks.create', { params: due('2027-01-01T00:00:00.25') });
    const halfAgain = await runner.run(adapter, 'todo.tasks.create', { params: due('2027-01-01T00:00:00.2500000') });
    expect(halfAgain).toMatchObject({ status: 'done', adopted: true, businessOperationId: half.businessOperationId });
    expect(undated).toMatchObject({ status: 'done', adopted: false });
    expect(sandbox.count('todo.tasks.create')).toBe(3);
  });
});

describe('events.create, todo.tasks.create: a param spelled as the default Graph documents is the create without it', () => {
  const withEvent = (field: string, value: unknown) => {
    const p = eventParams(4);
    return { op: 'events.create' as const, p, spelled: { ...p, event: { ...p.event, [field]: value } } };
  };
  const withTask = (field: string, value: unknown) => {
    const p = taskParams(5);
    return { op: 'todo.tasks.create' as const, p, spelled: { ...p, task: { ...p.task, [field]: value } } };
  };
  it.each([
    ['allowNewTimeProposals', true, withEvent],
    ['responseRequested', true, withEvent],
    ['status', 'notStarted', withTask],
    ['isReminderOn', false, withTask],
  ])('%s: %j on the second run ⇒ the second run adopts the first, one item', async (field, value, make) => {
    const runner = await setup();
    const { op, p, spelled } = make(field, value);
    const first = await runner.run(adapter, op, { params: p } as never);
    const second = await runner.run(adapter, op, { params: spelled } as never);
    expect(second).toMatchObject({ status: 'done', adopted: true, businessOperationId: first.businessOperationId });
    expect(sandbox.requestCount(op)).toBe(1);
  });
});

describe('a duplicate already made', () => {
  it('the lookup finds two mails of this operation ⇒ handed off after that one lookup, naming both, not at the window', async () => {
    const runner = await setup({ network: { 'mail.send': ['pass', 'drop-response'] } });
    const params = mailParams(4);
    // A mail of this operation sent before (say by a copy of the program with another ledger).
    const id = operationIdFor(adapter, 'mail.send', params);
    await adapter.doExecute('mail.send', params, executeContext(adapter, 'mail.send', id));
    const r = await runner.run(adapter, 'mail.send', { params });
    expect(r.status).toBe('handed-off');
    expect(sandbox.count('mail.send')).toBe(2);
    expect(sandbox.requestCount('mail.lookup')).toBe(1);
    expect(packets[0]).toMatchObject({ reason: 'unknown-no-safe-resend' });
    for (const m of sandbox.records()) expect(packets[0]!.explanation).toContain(m.id);
  });
});

describe('events.create and todo.tasks.create: lost responses', () => {
  it.each([
    {
      name: 'events: lost 201 ⇒ lookup finds the event ⇒ exactly one event, no resend relying on transactionId',
      op: 'events.create' as const,
      params: eventParams(1),
      sandbox: { duplicateTransactionId: 'create-new' as const },
    },
    {
      name: 'tasks: lost 201 ⇒ lookup on the linkedResource finds it ⇒ exactly one task',
      op: 'todo.tasks.create' as const,
      params: taskParams(1),
      sandbox: {},
    },
  ])('$name', async ({ op, params, sandbox: options }) => {
    const runner = await setup({ network: { [op]: ['drop-response'] }, ...options });
    const r = await runner.run(adapter, op, { params } as never);
    expect(r).toMatchObject({ status: 'done', adopted: true, attempts: 1 });
    expect(sandbox.requestCount(op)).toBe(1);
    expect(sandbox.count(op)).toBe(1);
  });

  it('events: the POST never arrived (503 before processing) and the lookup cannot tell ⇒ handoff, not a resend on an unknown transactionId contract', async () => {
    const runner = await setup(
      { faults: { 'events.create': [{ kind: 'status', status: 503 }] } },
      { lookupWindowMs: 10_000 },
    );
    const r = await runner.run(adapter, 'events.create', { params: eventParams(2) });
    expect(r.status).toBe('handed-off');
    expect(sandbox.requestCount('events.create')).toBe(1);
    expect(packets[0]?.providerKey).toMatch(/^rs-/);
  });

  it('tasks: the tenant refuses the lookup filter (400) ⇒ cannot tell ⇒ handoff, never a resend', async () => {
    const runner = await setup(
      {
        network: { 'todo.tasks.create': ['drop-response'] },
        faults: { 'todo.tasks.lookup': () => ({ kind: 'status', status: 400, code: 'invalidRequest' }) },
      },
      { lookupWindowMs: 10_000 },
    );
    const r = await runner.run(adapter, 'todo.tasks.create', { params: taskParams(2) });
    expect(r.status).toBe('handed-off');
    expect(sandbox.requestCount('todo.tasks.create')).toBe(1);
    expect(sandbox.count('todo.tasks.create')).toBe(1);
  });
});

beforeEach(() => {
  packets = [];
});
