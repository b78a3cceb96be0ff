import { operationIdFor } from '@retrysafe/testkit/conformance';
import { describe, expect, it } from 'vitest';
import { etagDocumentsUpdate } from '../src/index.js';
import { startEtagSandbox } from '../src/sandbox/index.js';
import { adapterAt, executeOn, lookupOn, rejected, sandboxPerTest, withAdapter } from './helpers.js';

const OP = 'documents.update';

describe('conditional idempotency (If-Match / ETag): SDK → sandbox', () => {
  const env = sandboxPerTest(() => startEtagSandbox({ port: 0 }), 'acme-docs', OP, etagDocumentsUpdate);
  const edit = (over: Record<string, unknown> = {}) => ({
    id: 'doc-1',
    etag: env.sb.etag('doc-1'),
    title: 'Final',
    body: 'Signed.',
    ...over,
  });

  it('matching If-Match ⇒ 200 ⇒ succeeded; no key travels; the precondition is sent as declared', async () => {
    const p = edit();
    expect(env.adapter.deriveProviderKey(OP, operationIdFor(env.adapter, OP, p))).toBeNull();
    expect(await env.execute(p)).toMatchObject({
      kind: 'succeeded',
      status: 200,
      providerRef: 'doc-1',
      requestId: 'up_1',
    });
    expect(env.sb.requests[0]!.headers['if-match']).toBe('"g1"');
    expect(env.sb.records()[0]).toMatchObject({ title: 'Final', generation: 2 });
  });

  it('412 on the first attempt ⇒ rejected (conflict): the caller read a stale ETag, nothing applied', async () => {
    const p = edit();
    env.sb.writeAsOther('doc-1', { title: 'Theirs' });
    expect(await env.execute(p)).toMatchObject(rejected('conflict', 412, 'conditionNotMet'));
    expect(env.sb.count(OP)).toBe(0);
  });

  it('412 on a re-send ⇒ unknown, then the lookup recognises our own earlier write ⇒ found succeeded; one write', async () => {
    const p = edit();
    await env.execute(p); // response "lost"
    const resend = await env.execute(p, 2);
    expect(resend).toMatchObject({ kind: 'unknown', status: 412 });
    expect(await env.lookup(p)).toMatchObject({
      kind: 'found',
      outcome: { kind: 'succeeded', result: { title: 'Final', generation: 2 } },
    });
    expect(env.sb.count(OP)).toBe(1);
  });

  it('lookup: the ETag still current ⇒ cannot-tell (nothing written yet, but a held request may still land: the card bounds no late apply); another writer ⇒ found rejected (conflict)', async () => {
    const p = edit();
    expect(await env.lookup(p)).toMatchObject({ kind: 'cannot-tell' });
    env.sb.writeAsOther('doc-1', { title: 'Theirs' });
    expect(await env.lookup(p)).toMatchObject({
      kind: 'found',
      outcome: { kind: 'rejected', reason: 'conflict' },
    });
  });

  it('validation 400 ⇒ rejected; unknown document 404 ⇒ rejected (not-found)', async () => {
    const bad = edit({ title: 7 });
    await env.expectRefused(bad, async (loose) => {
      expect(await executeOn(loose, OP, bad)).toMatchObject(rejected('validation', 400));
    });
    const missing = edit({ id: 'doc-404' });
    expect(await env.execute(missing)).toMatchObject(rejected('not-found', 404));
  });

  it('the precondition must be an intent field, so no re-send can carry another one', () => {
    const spec = etagDocumentsUpdate('acme-docs');
    const card = spec.card;
    expect(() =>
      adapterAt(
        env.sb.url,
        OP,
        {
          ...spec,
          card: { ...card, businessOperationId: { rule: 'id, title, body', intentFields: ['id', 'title', 'body'] } },
        },
        1000,
      ),
    ).toThrow(/precondition.param etag must be one of the card's intent fields/);
  });

  it('a generation precondition in the query (GCS ifGenerationMatch) with the validator read from the body', async () => {
    const spec = etagDocumentsUpdate('acme-docs');
    const card = spec.card;
    await withAdapter(
      env.sb.url,
      OP,
      {
        ...spec,
        card: {
          ...card,
          businessOperationId: {
            rule: 'id, generation, title, body',
            intentFields: ['id', 'generation', 'title', 'body'],
          },
        },
        paramsSchema: {
          type: 'object',
          required: ['id', 'generation', 'title', 'body'],
          properties: {
            id: { type: 'string' },
            generation: { type: 'integer' },
            title: { type: 'string' },
            body: { type: 'string' },
          },
        },
        precondition: { param: 'generation', query: 'ifGenerationMatch', validatorField: 'generation' },
      },
      async (gen) => {
        const p = { id: 'doc-1', generation: 1, title: 'Final', body: 'Signed.' };
        expect(await lookupOn(gen, OP, p)).toMatchObject({ kind: 'cannot-tell' });
        expect(await executeOn(gen, OP, p)).toMatchObject({ kind: 'succeeded' });
        expect(env.sb.requests.at(-1)!.path).toBe('/documents/doc-1?ifGenerationMatch=1');
        expect(await executeOn(gen, OP, p, 2)).toMatchObject({ kind: 'unknown', status: 412 });
        expect(await lookupOn(gen, OP, p)).toMatchObject({
          kind: 'found',
          outcome: { kind: 'succeeded' },
        });
        expect(env.sb.count(OP)).toBe(1);
      },
    );
  });
});
