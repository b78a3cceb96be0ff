// The real Graph SDK → the loopback sandbox, straight through doExecute/doLookup: one test per
// case of the error mapping in src/msgraph-errors.ts, for each operation.

import { createServer as createHttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { asBusinessOperationId, businessOperationId, UnknownOperationError } from '@retrysafe/contract';
import { createMemoryLedger, createRunner, createVirtualClock, exportReceiptsJsonl } from '@retrysafe/core';
import { startFaultProxy } from '@retrysafe/testkit';
import { closeAfterTest } from '@retrysafe/testkit/close-after-test';
import { executeContext, lookupContext } from '@retrysafe/testkit/conformance';
import { afterEach, beforeEach, describe, expect, it, onTestFinished } from 'vitest';
import { createMsGraphAdapter, type MsGraphAdapter } from '../src/index.js';
import { DEFAULT_EXTENDED_PROPERTY_ID } from '../src/msgraph-operations.js';
import {
  type MsGraphSandbox,
  msGraphDrill,
  type SandboxFault,
  type SandboxKind,
  startMsGraphSandbox,
} from '../src/sandbox/index.js';
import { closedPortUrl, eventParams, mailParams, startGraphFaultProxy, TOKEN, taskParams } from './helpers.js';

let sandbox: MsGraphSandbox;
let adapter: MsGraphAdapter;

beforeEach(async () => {
  sandbox = await startMsGraphSandbox({ accessToken: TOKEN, users: ['alice@contoso.test'] });
  adapter = adapterAt(sandbox.url);
});
afterEach(async () => {
  await sandbox.close();
});

const OPS = [
  { op: 'mail.send', kind: 'mail.send', params: () => mailParams(1) },
  { op: 'events.create', kind: 'events.create', params: () => eventParams(1) },
  { op: 'todo.tasks.create', kind: 'todo.tasks.create', params: () => taskParams(1) },
] as const;

async function exec(op: string, params: unknown, id = `${op}-op-1`, a = adapter) {
  return a.doExecute(op, params, executeContext(a, op, asBusinessOperationId(id)));
}

async function lookup(op: string, id: string, params: unknown, a = adapter) {
  return a.doLookup(op, lookupContext(a, op, asBusinessOperationId(id), params));
}

/** An adapter pointed elsewhere (a fault proxy, a closed port), with its own timeout. */
const adapterAt = (baseUrl: string, timeoutMs = 5_000) =>
  createMsGraphAdapter({ accessToken: TOKEN, baseUrl, timeoutMs });

describe('success', () => {
  it('mail.send: 202 ⇒ succeeded (accepted), the message carries the business-operation id tag and goes to Sent Items', async () => {
    const out = await exec('mail.send', mailParams(1), 'order-17-reminder');
    expect(out).toMatchObject({ kind: 'succeeded', status: 202, result: { state: 'accepted', messageId: null } });
    expect(out.requestId).toMatch(/^[0-9a-f-]{36}$/);
    const [msg] = sandbox.records();
    expect(msg).toMatchObject({
      kind: 'mail.send',
      mailbox: 'me',
      extendedProperties: [{ id: DEFAULT_EXTENDED_PROPERTY_ID, value: 'order-17-reminder' }],
    });
    expect(sandbox.count('mail.send')).toBe(1);
  });

  it('mail.send from /users/{id}: the mailbox is the user', async () => {
    const out = await exec('mail.send', mailParams(2, 'alice@contoso.test'));
    expect(out.kind).toBe('succeeded');
    expect(sandbox.requests()[0]?.path).toBe('/v1.0/users/alice%40contoso.test/sendMail');
    expect(sandbox.records()[0]).toMatchObject({ mailbox: 'alice@contoso.test' });
  });

  it('events.create: 201 ⇒ succeeded with the event id as providerRef and transactionId derived from the business-operation id', async () => {
    const id = asBusinessOperationId('meeting-42');
    const key = adapter.deriveProviderKey('events.create', id);
    expect(key).toBe('rs-meeting-42'); // fits the rule: readable
    const derived = businessOperationId('msgraph.events.create', { subject: 'Review 1' }); // has '.' and ':' ⇒ digest
    expect(adapter.deriveProviderKey('events.create', derived)).toMatch(/^rs-[0-9a-f]{61}$/);
    expect(adapter.deriveProviderKey('events.create', derived)).toBe(
      adapter.deriveProviderKey('events.create', derived),
    );
    const out = await adapter.doExecute('events.create', eventParams(1), executeContext(adapter, 'events.create', id));
    expect(out).toMatchObject({ kind: 'succeeded', status: 201, result: { transactionId: key } });
    expect(out.providerRef).toBe((out as { result: { id: string } }).result.id);
  });

  it('todo.tasks.create: 201 ⇒ succeeded; the task carries a linkedResource whose externalId is the business-operation id', async () => {
    const out = await exec('todo.tasks.create', taskParams(1), 'ticket-9-followup');
    expect(out).toMatchObject({ kind: 'succeeded', status: 201, result: { status: 'notStarted' } });
    expect(sandbox.records()[0]).toMatchObject({
      linkedResources: [{ applicationName: 'retrysafe', externalId: 'ticket-9-followup' }],
    });
  });

  it('mail.send and todo.tasks.create derive no provider key (none travels)', () => {
    const id = asBusinessOperationId('x');
    expect(adapter.deriveProviderKey('mail.send', id)).toBeNull();
    expect(adapter.deriveProviderKey('todo.tasks.create', id)).toBeNull();
  });

  it('a 202 that carries Retry-After is still one accepted mail: succeeded, nothing to resend', async () => {
    sandbox.setFaults('mail.send', [{ kind: 'accepted-with-retry-after', retryAfterS: 5 }]);
    const out = await exec('mail.send', mailParams(3));
    expect(out).toMatchObject({ kind: 'succeeded', status: 202 });
    expect(sandbox.requestCount('mail.send')).toBe(1);
    expect(sandbox.count('mail.send')).toBe(1);
  });
});

// status rows: [status, expected outcome fields, whether the sandbox applied the effect first]
const STATUS_ROWS: readonly [number, Record<string, unknown>, boolean][] = [
  [400, { kind: 'rejected', reason: 'validation' }, false],
  [403, { kind: 'rejected', reason: 'permission' }, false],
  [413, { kind: 'rejected', reason: 'validation' }, false],
  [418, { kind: 'rejected', reason: 'other' }, false],
  [429, { kind: 'not-applied', retryAfterMs: 7_000 }, false],
  [500, { kind: 'unknown', cause: 'server-error' }, true],
  [502, { kind: 'unknown', cause: 'server-error' }, true],
  [503, { kind: 'unknown', cause: 'server-error', retryAfterMs: 7_000 }, true],
  [504, { kind: 'unknown', cause: 'server-error', retryAfterMs: 7_000 }, true],
  [507, { kind: 'rejected', reason: 'other' }, false],
];

describe.each(OPS)(
  '$op: every HTTP status row maps to one outcome, with status, code and request id kept',
  ({ op, kind, params }) => {
    it.each(STATUS_ROWS)('HTTP %i', async (status, expected, commit) => {
      const fault: SandboxFault = { kind: 'status', status, retryAfterS: 7, code: `Code${status}`, commit };
      sandbox.setFaults(kind as SandboxKind, [fault]);
      const out = await exec(op, params());
      expect(out).toMatchObject({ ...expected, status, code: `Code${status}` });
      expect(out.requestId).toMatch(/^[0-9a-f-]{36}$/);
      expect(sandbox.requestCount(kind as SandboxKind)).toBe(1);
      expect(sandbox.count(kind)).toBe(commit ? 1 : 0);
    });

    it('HTTP 409: rejected (conflict) — except events, where it may mean the transactionId already created it ⇒ unknown', async () => {
      sandbox.setFaults(kind as SandboxKind, [{ kind: 'status', status: 409, code: 'Conflict' }]);
      const out = await exec(op, params());
      if (op === 'events.create') expect(out).toMatchObject({ kind: 'unknown', status: 409 });
      else expect(out).toMatchObject({ kind: 'rejected', reason: 'conflict', status: 409 });
    });

    it('401 from a wrong token ⇒ rejected (authentication)', async () => {
      const wrong = createMsGraphAdapter({ accessToken: () => 'wrong', baseUrl: sandbox.url, timeoutMs: 5_000 });
      const out = await exec(op, params(), 'auth-1', wrong);
      expect(out).toMatchObject({
        kind: 'rejected',
        reason: 'authentication',
        status: 401,
        code: 'InvalidAuthenticationToken',
      });
      expect(sandbox.count(kind)).toBe(0);
    });

    it('lost response (effect applied, socket reset) ⇒ unknown (connection-reset), one record', async () => {
      // A network fault: the fault proxy forwards the request, waits for Graph's answer, then resets the connection.
      const proxy = closeAfterTest(await startGraphFaultProxy(sandbox.url, { [kind]: ['drop-response'] }));
      const lost = adapterAt(`${proxy.url}/`);
      const out = await exec(op, params(), 'lost-1', lost);
      expect(out).toMatchObject({ kind: 'unknown', cause: 'connection-reset' });
      expect(proxy.requests[0]).toMatchObject({
        fault: 'drop-response',
        forwarded: true,
        upstreamStatus: op === 'mail.send' ? 202 : 201,
      });
      expect(sandbox.count(kind)).toBe(1);
    });

    it('status line arrives, body cut off ⇒ unknown (truncated-response), one record', async () => {
      // A network fault: the fault proxy cuts the sandbox's answer after its status line.
      const proxy = closeAfterTest(await startFaultProxy({ target: sandbox.url, faults: ['truncate-response'] }));
      const cut = adapterAt(`${proxy.url}/`);
      const out = await exec(op, params(), 'cut-1', cut);
      expect(out).toMatchObject({
        kind: 'unknown',
        cause: 'truncated-response',
        status: op === 'mail.send' ? 202 : 201,
      });
      expect(proxy.requests[0]).toMatchObject({ fault: 'truncate-response', forwarded: true });
      expect(sandbox.count(kind)).toBe(1);
    });

    it('answer held past the client timeout ⇒ unknown (timeout), one record', async () => {
      const proxy = closeAfterTest(await startGraphFaultProxy(sandbox.url, { [kind]: [{ kind: 'delay', ms: 3_000 }] }));
      const fast = adapterAt(`${proxy.url}/`, 150);
      const out = await exec(op, params(), 'slow-1', fast);
      expect(out).toMatchObject({ kind: 'unknown', cause: 'timeout' });
      // The client may give up before the proxy's forward reaches the sandbox: wait for the sandbox to record it.
      await expect.poll(() => sandbox.count(kind)).toBe(1);
    });

    it.each([307, 308])(
      'a %i redirect is not followed: the POST body is never re-sent to the Location (here another origin)',
      async (status) => {
        const redirector = createHttpServer((req, res) => {
          res.writeHead(status, { location: new URL(req.url ?? '/', sandbox.url).toString() }).end();
        });
        await new Promise<void>((r) => redirector.listen(0, '127.0.0.1', () => r()));
        try {
          const { port } = redirector.address() as AddressInfo;
          const out = await exec(op, params(), 'redirected-1', adapterAt(`http://127.0.0.1:${port}/`));
          expect(out).toMatchObject({ kind: 'unknown', status });
          expect(sandbox.requests()).toHaveLength(0);
        } finally {
          await new Promise((r) => redirector.close(r));
        }
      },
    );

    it('connection refused ⇒ not-applied (the request never left)', async () => {
      const nowhere = adapterAt(await closedPortUrl());
      const out = await exec(op, params(), 'refused-1', nowhere);
      expect(out).toMatchObject({ kind: 'not-applied' });
      expect((out as { message: string }).message).toContain('ECONNREFUSED');
    });

    it('invalid params ⇒ rejected (validation) with nothing sent', async () => {
      const out = await exec(op, { mailbox: 'me' });
      expect(out).toMatchObject({ kind: 'rejected', reason: 'validation' });
      expect((out as { message: string }).message).toContain('nothing was sent');
      expect(sandbox.requests()).toHaveLength(0);
    });
  },
);

describe('provider validation errors come back as rejected with the Graph code', () => {
  it('mail.send to a malformed address ⇒ 400 ErrorInvalidRecipients', async () => {
    const p = mailParams(1);
    const bad = { ...p, message: { ...p.message, toRecipients: [{ emailAddress: { address: 'not-an-address' } }] } };
    expect(await exec('mail.send', bad)).toMatchObject({
      kind: 'rejected',
      reason: 'validation',
      status: 400,
      code: 'ErrorInvalidRecipients',
    });
  });
  it('an unknown user mailbox ⇒ 404 ErrorInvalidUser ⇒ rejected (not-found)', async () => {
    expect(await exec('mail.send', mailParams(1, 'nobody@contoso.test'))).toMatchObject({
      kind: 'rejected',
      reason: 'not-found',
      status: 404,
      code: 'ErrorInvalidUser',
    });
  });
  it("an address Graph's message echoes is blanked in receipts as the runner's redact option says", async () => {
    for (const [redact, shown] of [
      [{}, '[redacted]'],
      [{ pii: false }, 'nobody@contoso.test'],
    ] as const) {
      const ledger = createMemoryLedger();
      const params = mailParams(1, 'nobody@contoso.test');
      // The caller's intent: no user is read, so the POST names the mailbox by the address Graph's answer echoes.
      const intent = { mailbox: params.mailbox, message: params.message };
      const r = await createRunner({ ledger, redact }).run(adapter, 'mail.send', { params, intent });
      expect(r.status).toBe('handed-off');
      expect(await exportReceiptsJsonl(ledger)).toContain(`The requested user '${shown}' is invalid.`);
    }
  });
  it('an unknown To Do list ⇒ 404 ⇒ rejected (not-found)', async () => {
    expect(await exec('todo.tasks.create', taskParams(1, 'no-such-list'))).toMatchObject({
      kind: 'rejected',
      reason: 'not-found',
      status: 404,
    });
  });
  it('saveToSentItems cannot be turned off (it is how mail is reconciled)', async () => {
    const out = await exec('mail.send', { ...mailParams(1), saveToSentItems: false });
    expect(out).toMatchObject({ kind: 'rejected', reason: 'validation' });
    expect(sandbox.requests()).toHaveLength(0);
  });
  it('events.create refuses a caller-set transactionId (it is derived from the business-operation id)', async () => {
    const p = eventParams(1);
    const out = await exec('events.create', { ...p, event: { ...p.event, transactionId: 'mine' } });
    expect(out).toMatchObject({ kind: 'rejected', reason: 'validation' });
  });
  it('an unknown operation throws UnknownOperationError', async () => {
    await expect(
      adapter.doExecute('mail.delete', mailParams(1), executeContext(adapter, 'mail.send', asBusinessOperationId('x'))),
    ).rejects.toSatisfy((e) => UnknownOperationError.isInstance(e));
    expect(() => adapter.deriveProviderKey('nope', asBusinessOperationId('x'))).toThrow(/no operation "nope"/);
  });
});

describe('access token', () => {
  it('a token provider that fails ⇒ not-applied (nothing was sent), no request reaches Graph', async () => {
    const broken = createMsGraphAdapter({
      accessToken: async () => {
        throw new Error('token endpoint unreachable');
      },
      baseUrl: sandbox.url,
    });
    const out = await broken.doExecute(
      'mail.send',
      mailParams(1),
      executeContext(broken, 'mail.send', asBusinessOperationId('tok-1')),
    );
    expect(out).toMatchObject({ kind: 'not-applied' });
    expect((out as { message: string }).message).toMatch(/nothing was sent: token endpoint unreachable/);
    expect(sandbox.requests()).toHaveLength(0);
    expect((await lookup('mail.send', 'tok-1', mailParams(1), broken)).kind).toBe('cannot-tell');
  });

  it.each(['sekrit\nx', 'sekrit€x'])(
    'a token a header cannot carry (%j): fetch refuses to build the request ⇒ not-applied, never sent, nothing reaches Graph',
    async (token) => {
      const odd = createMsGraphAdapter({ accessToken: async () => token, baseUrl: sandbox.url });
      const out = await odd.doExecute(
        'mail.send',
        mailParams(1),
        executeContext(odd, 'mail.send', asBusinessOperationId('tok-odd')),
      );
      expect(out).toMatchObject({ kind: 'not-applied', neverSent: true, code: 'REQUEST_NOT_BUILT' });
      expect(JSON.stringify(out)).not.toContain('sekrit');
      expect(sandbox.requests()).toHaveLength(0);
    },
  );

  it('a token provider that keeps failing: the operation is given back (nothing was sent), not handed to a person', async () => {
    const broken = createMsGraphAdapter({
      accessToken: async () => {
        throw new Error('token endpoint unreachable');
      },
      baseUrl: sandbox.url,
    });
    const ledger = createMemoryLedger();
    const run = createRunner({ ledger, policy: { maxAttempts: 1 } }).run(broken, 'mail.send', {
      params: mailParams(1),
    });
    await expect(run).rejects.toThrow(/nothing was sent/);
    const [row] = await ledger.list({});
    expect(row).toMatchObject({ state: 'not-sent' });
    expect(sandbox.requests()).toHaveLength(0);
  });
  it('the token is sent as a Bearer header on plain-http loopback (the SDK default chain would strip it)', async () => {
    const calls: number[] = [];
    const counting = createMsGraphAdapter({ accessToken: () => (calls.push(1), TOKEN), baseUrl: sandbox.url });
    expect(
      (
        await counting.doExecute(
          'mail.send',
          mailParams(1),
          executeContext(counting, 'mail.send', asBusinessOperationId('tok-2')),
        )
      ).kind,
    ).toBe('succeeded');
    expect(calls).toHaveLength(1); // asked once per request, so it may refresh
  });
});

describe('lookup', () => {
  it('mail: found in Sent Items once visible; before that "cannot tell", never "not found"', async () => {
    sandbox.setSentItemsDelay(60_000);
    await exec('mail.send', mailParams(1), 'mail-lookup-1');
    const before = await lookup('mail.send', 'mail-lookup-1', mailParams(1));
    expect(before.kind).toBe('cannot-tell');
    sandbox.advance(60_000);
    const after = await lookup('mail.send', 'mail-lookup-1', mailParams(1));
    expect(after).toMatchObject({ kind: 'found', outcome: { kind: 'succeeded', result: { state: 'in-sent-items' } } });
    if (after.kind !== 'found') throw new Error('unreachable');
    expect(after.outcome.providerRef).toMatch(/^AAMkMsg/);
  });

  it("the drill's sandbox shows a sent mail in Sent Items only after transport, as Graph documents: a lookup right after cannot tell", async () => {
    const clock = createVirtualClock(Date.UTC(2026, 11, 1));
    const drillSandbox = await msGraphDrill.startSandbox({ clock });
    onTestFinished(() => drillSandbox.close());
    const a = msGraphDrill.createAdapter({ baseUrl: drillSandbox.url, timeoutMs: 5_000 }) as MsGraphAdapter;
    expect((await exec('mail.send', mailParams(1), 'drill-mail-1', a)).kind).toBe('succeeded');
    expect((await lookup('mail.send', 'drill-mail-1', mailParams(1), a)).kind).toBe('cannot-tell');
  });

  it("mail: another operation's mail is not a match", async () => {
    await exec('mail.send', mailParams(1), 'mail-a');
    expect((await lookup('mail.send', 'mail-b', mailParams(1))).kind).toBe('cannot-tell');
  });

  it('events and tasks: found by their tag', async () => {
    await exec('events.create', eventParams(1), 'ev-1');
    await exec('todo.tasks.create', taskParams(1), 'task-1');
    expect(await lookup('events.create', 'ev-1', eventParams(1))).toMatchObject({
      kind: 'found',
      outcome: { kind: 'succeeded' },
    });
    expect(await lookup('todo.tasks.create', 'task-1', taskParams(1))).toMatchObject({
      kind: 'found',
      outcome: { kind: 'succeeded' },
    });
    expect((await lookup('todo.tasks.create', 'task-2', taskParams(1))).kind).toBe('cannot-tell');
  });

  it("tasks: a caller's own linkedResource whose externalId equals this operation's id is not a match", async () => {
    // Task A links to the caller's ticket PROJ-1; task B's business-operation id is PROJ-1 and its POST never arrived.
    const linked = {
      ...taskParams(1),
      task: { title: 'Call customer 1', linkedResources: [{ applicationName: 'Jira', externalId: 'PROJ-1' }] },
    };
    expect((await exec('todo.tasks.create', linked, 'task-a')).kind).toBe('succeeded');
    expect((await lookup('todo.tasks.create', 'PROJ-1', taskParams(2))).kind).toBe('cannot-tell');
  });

  it("tasks: a linkedResource in retrysafe's name given in the params does not tag the task with another operation's id", async () => {
    const copied = { applicationName: 'retrysafe', displayName: 'retrysafe business operation', externalId: 'task-b' };
    const params = { ...taskParams(1), task: { title: 'Call customer 1', linkedResources: [copied] } };
    expect((await exec('todo.tasks.create', params, 'task-a')).kind).toBe('succeeded');
    expect((await lookup('todo.tasks.create', 'task-b', taskParams(2))).kind).toBe('cannot-tell');
    expect(await lookup('todo.tasks.create', 'task-a', params)).toMatchObject({ kind: 'found' });
  });

  // Graph: "Filtering the value property of an extended property is case-insensitive" (singlevaluelegacyextendedproperty-get).
  it.each([
    ['mail.send', mailParams(1)],
    ['events.create', eventParams(1)],
    ['todo.tasks.create', taskParams(1)],
  ] as const)("%s: another operation's item whose id differs only by case is not a match", async (op, params) => {
    expect((await exec(op, params, 'Invoice-A')).kind).toBe('succeeded');
    expect((await lookup(op, 'invoice-a', params)).kind).toBe('cannot-tell');
    expect(await lookup(op, 'Invoice-A', params)).toMatchObject({ kind: 'found', outcome: { kind: 'succeeded' } });
  });

  it('ours on a full page of near-matches (ids differing only by case): cannot-tell, as a second of ours may follow', async () => {
    expect((await exec('mail.send', mailParams(1), 'Invoice-A')).kind).toBe('succeeded');
    for (const other of ['invoice-a', 'INVOICE-A', 'Invoice-a', 'iNvoice-A'])
      expect((await exec('mail.send', mailParams(1), other)).kind).toBe('succeeded');
    // The sixth, not on the page read: a second mail of this operation.
    expect((await exec('mail.send', mailParams(1), 'Invoice-A')).kind).toBe('succeeded');
    expect(await lookup('mail.send', 'Invoice-A', mailParams(1))).toMatchObject({ kind: 'cannot-tell' });
  });

  // Graph: "To read all results, you must continue to call … with the @odata.nextLink … until [it] is no longer
  // returned" (graph/paging); a page may be shorter than $top.
  describe('paged by the server (a page shorter than $top, with @odata.nextLink)', () => {
    const pagedAdapter = async () => {
      const paged = await startMsGraphSandbox({ accessToken: TOKEN, users: ['alice@contoso.test'], pageSize: 2 });
      onTestFinished(() => paged.close());
      return { paged, a: adapterAt(paged.url) };
    };
    it.each(OPS)('$op: a second item of this operation on a later page ⇒ cannot-tell naming both', async (o) => {
      const { paged, a } = await pagedAdapter();
      for (const id of ['dup', 'Dup', 'DUP', 'dup']) {
        expect((await exec(o.op, o.params(), id, a)).kind).toBe('succeeded');
        paged.expireKeys(); // events fold a same-transactionId POST: a second event needs the key forgotten
      }
      expect(paged.records()).toHaveLength(4);
      const out = await lookup(o.op, 'dup', o.params(), a);
      expect(out).toMatchObject({ kind: 'cannot-tell', reason: expect.stringContaining('2 items') });
    });
    it('the same item on two pages (the list moved between the reads) is one item, not a duplicate', async () => {
      const id = 'moved-1';
      const ours = { id: 'AAMk-1', singleValueExtendedProperties: [{ id: DEFAULT_EXTENDED_PROPERTY_ID, value: id }] };
      const server = createHttpServer((req, res) => {
        const next = req.url?.includes('skip')
          ? {}
          : { '@odata.nextLink': `http://${req.headers.host}${req.url}&$skip=1` };
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ value: [ours], ...next }));
      });
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
      onTestFinished(() => new Promise<void>((r) => server.close(() => r())));
      const { port } = server.address() as AddressInfo;
      const out = await lookup('mail.send', id, mailParams(1), adapterAt(`http://127.0.0.1:${port}/`));
      expect(out).toMatchObject({ kind: 'found', outcome: { providerRef: expect.anything() } });
    });
    it('behind a base URL with a path prefix, the next page is asked at the same prefix', async () => {
      const id = 'prefixed-1';
      const ours = { id: 'AAMk-2', singleValueExtendedProperties: [{ id: DEFAULT_EXTENDED_PROPERTY_ID, value: id }] };
      const paths: string[] = [];
      const server = createHttpServer((req, res) => {
        paths.push(req.url ?? '');
        const page2 = req.url?.includes('skiptoken');
        const next = { '@odata.nextLink': `http://${req.headers.host}/graph/v1.0/users/me/messages?$skiptoken=2` };
        const atPrefix = req.url?.startsWith('/graph/v1.0/') === true;
        const body = atPrefix ? { value: page2 ? [ours] : [], ...(page2 ? {} : next) } : {};
        res.writeHead(atPrefix ? 200 : 404, { 'content-type': 'application/json' }).end(JSON.stringify(body));
      });
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
      onTestFinished(() => new Promise<void>((r) => server.close(() => r())));
      const { port } = server.address() as AddressInfo;
      const out = await lookup('mail.send', id, mailParams(1), adapterAt(`http://127.0.0.1:${port}/graph/`));
      expect(paths[1]).toBe('/graph/v1.0/users/me/messages?$skiptoken=2');
      expect(out).toMatchObject({ kind: 'found' });
    });
    it('a second mail of this operation moved unread onto page 1 (an item deleted as page 2 was asked): never the other adopted', async () => {
      const { paged } = await pagedAdapter();
      const a = adapterAt(paged.url);
      for (const id of ['dup', 'Dup', 'dup', 'DUP'])
        expect((await exec('mail.send', mailParams(1), id, a)).kind).toBe('succeeded');
      const [first, near, second] = paged.records();
      let deleted = false;
      const proxy = closeAfterTest(
        await startFaultProxy({
          target: paged.url,
          faults: (_n, req) => {
            // Pages of two by $skip: the near-match on page 1 goes, and the second of ours moves onto page 1, unread.
            if (req.path.includes('skip=2') && !deleted) deleted = paged.deleteRecord(near!.id);
            return 'pass';
          },
        }),
      );
      const viaProxy = adapterAt(`${proxy.url}/`);
      expect(await lookup('mail.send', 'dup', mailParams(1), viaProxy)).toMatchObject({ kind: 'cannot-tell' });
      expect(deleted).toBe(true);
      const out = await lookup('mail.send', 'dup', mailParams(1), viaProxy);
      expect(out).toMatchObject({ kind: 'cannot-tell', duplicates: [first!.id, second!.id] });
    });
    it.each(OPS)("$op: this operation's item behind a page of near-matches ⇒ found", async (o) => {
      const { a } = await pagedAdapter();
      for (const id of ['invoice-a', 'INVOICE-A', 'Invoice-A'])
        expect((await exec(o.op, o.params(), id, a)).kind).toBe('succeeded');
      expect(await lookup(o.op, 'Invoice-A', o.params(), a)).toMatchObject({ kind: 'found' });
    });
  });

  // Adopting one of two hides the other: which one is this operation's is for a person to say.
  it.each(OPS)(
    '$op: two items tagged with this id (a duplicate exists) ⇒ cannot-tell naming both',
    async ({ op, params }) => {
      await exec(op, params(), 'dup');
      sandbox.expireKeys(); // events fold a same-transactionId POST: a second event needs the key forgotten
      await exec(op, params(), 'dup');
      const ids = sandbox.records().map((r) => r.id);
      expect(ids).toHaveLength(2);
      const out = await lookup(op, 'dup', params());
      expect(out).toMatchObject({ kind: 'cannot-tell', reason: expect.stringContaining('2 items') });
      for (const id of ids) expect(out.kind === 'cannot-tell' && out.reason).toContain(id);
      expect(out).toMatchObject({ duplicates: ids });
    },
  );

  it.each([
    [429, 'mail.lookup', 'mail.send', mailParams(1)],
    [503, 'events.lookup', 'events.create', eventParams(1)],
    [400, 'todo.tasks.lookup', 'todo.tasks.create', taskParams(1)],
    [403, 'mail.lookup', 'mail.send', mailParams(1)],
  ] as const)(
    'lookup answered %i (%s) ⇒ cannot-tell, with status and Retry-After kept',
    async (status, kind, op, params) => {
      sandbox.setFaults(kind, [{ kind: 'status', status, retryAfterS: 3 }]);
      const out = await lookup(op, 'l-1', params);
      expect(out).toMatchObject({ kind: 'cannot-tell', status, retryAfterMs: 3_000 });
    },
  );

  it('lookup with no answer (connection refused) ⇒ cannot-tell', async () => {
    const nowhere = createMsGraphAdapter({ accessToken: TOKEN, baseUrl: await closedPortUrl() });
    expect((await lookup('mail.send', 'l-2', mailParams(1), nowhere)).kind).toBe('cannot-tell');
  });

  it('lookup sends the documented $filter on the extended property', async () => {
    await lookup('mail.send', 'order-1', mailParams(1));
    const req = sandbox.requests().at(-1);
    expect(req?.path).toBe('/v1.0/me/mailFolders/sentitems/messages');
    const q = new URLSearchParams(req?.query ?? '');
    expect(q.get('$filter')).toBe(
      `singleValueExtendedProperties/Any(ep: ep/id eq '${DEFAULT_EXTENDED_PROPERTY_ID}' and ep/value eq 'order-1')`,
    );
    expect(q.get('$select')).toBe('id,internetMessageId,sentDateTime');
    expect(q.get('$expand')).toBe(`singleValueExtendedProperties($filter=id eq '${DEFAULT_EXTENDED_PROPERTY_ID}')`);
  });
});

describe('events: transactionId (documented intent emulated; the card still says unknown)', () => {
  it('a second POST with the same transactionId creates no second event in the sandbox', async () => {
    const first = await exec('events.create', eventParams(1), 'ev-dup');
    const second = await exec('events.create', eventParams(1), 'ev-dup');
    expect(sandbox.count('events.create')).toBe(1);
    expect(second.providerRef).toBe(first.providerRef);
    expect(adapter.operations['events.create']?.card.storedResult.semantics.value).toBe('unknown');
  });
  it('after expireKeys() the same transactionId makes a second event (why the runner never relies on it)', async () => {
    await exec('events.create', eventParams(1), 'ev-exp');
    sandbox.expireKeys();
    await exec('events.create', eventParams(1), 'ev-exp');
    expect(sandbox.count('events.create')).toBe(2);
  });
});
