import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { CardValidationError, validateCard } from '@retrysafe/contract';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { cardsInit } from '../src/commands/cards/init/index.js';
import { refusals } from '../src/commands/cards/refusals.js';
import { cardsOf, loadAdapters } from '../src/registry.js';
import { cli, PARTIAL_CARD, REPO, readCardFile } from './helpers.js';

const schemaFile = join(REPO, 'packages/contract/schema/retry-safety-card.v1.schema.json');
const validate = new Ajv2020({ allErrors: true, strict: true }).compile(
  JSON.parse(readFileSync(schemaFile, 'utf8')) as object,
);

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'rs-cards-init-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('the published JSON Schema, read by a real validator (ajv, draft 2020-12)', () => {
  it('accepts every card the adapters ship', async () => {
    let n = 0;
    for (const entry of await loadAdapters()) {
      for (const c of await cardsOf(entry)) {
        n++;
        expect(
          validate(JSON.parse(JSON.stringify(c.card))),
          `${c.card.operation}: ${JSON.stringify(validate.errors)}`,
        ).toBe(true);
      }
    }
    expect(n).toBeGreaterThanOrEqual(16);
  });

  it('rejects a misspelled field, a bad enum value and a fact without its source', async () => {
    const [entry] = await loadAdapters(['stripe']);
    const card = JSON.parse(JSON.stringify((await cardsOf(entry!))[0]!.card)) as Record<
      string,
      Record<string, unknown>
    >;
    const typo = { ...card, lookup: { methd: card.lookup!.method, consistencyDelay: card.lookup!.consistencyDelay } };
    expect(validate(typo)).toBe(false);
    expect(validate.errors!.map((e) => e.instancePath + ' ' + e.message)).toEqual(
      expect.arrayContaining([
        "/lookup must have required property 'method'",
        '/lookup must NOT have additional properties',
      ]),
    );
    expect(validate({ ...card, concurrency: { value: 'sometimes', source: 'x' } })).toBe(false);
    expect(validate({ ...card, keyReuse: { value: 'never' } })).toBe(false);
  });
});

describe('retrysafe cards init --from', () => {
  it('fills what the file has, leaves every other fact unknown (listed in unverified), and says what the runner will refuse', async () => {
    const from = join(dir, 'partial.yaml');
    writeFileSync(from, PARTIAL_CARD);
    const r = await cardsInit({ from, out: join(dir, 'card.yaml') });
    expect(validateCard(r.card).problems).toEqual([]);
    expect(r.card.providerKey.name.value).toBe('Idempotency-Key');
    expect(r.card.lookup.method.value).toBe('unknown');
    expect(r.unknowns).toEqual(
      expect.arrayContaining([
        'retention.minimum',
        'lookup.method',
        'lookup.consistencyDelay',
        'concurrency',
        'parameterMatching',
      ]),
    );
    expect(r.card.unverified.map((u) => u.field).sort()).toEqual([...r.unknowns].sort());
    expect(r.defaulted).toContain('limits.maxAttempts');
    expect(r.refusals.join('\n')).toMatch(/no re-send after an unknown outcome.*retention\.minimum = unknown/);
    expect(r.refusals.join('\n')).toMatch(
      /no lookup .*lookup\.method = unknown.*every unknown outcome goes to a person/,
    );
    expect(r.refusals.join('\n')).toMatch(/no corrected request .*sideEffect\.rejectionMayCreate = unknown/);
    // the written file is a card the loader and the schema accept
    const loaded = readCardFile(join(dir, 'card.yaml'));
    expect(loaded).toEqual(r.card);
    expect(readFileSync(join(dir, 'card.yaml'), 'utf8')).toMatch(/^# yaml-language-server: \$schema=/);
    expect(validate(JSON.parse(JSON.stringify(loaded)))).toBe(true);
  });

  it('with every fact known the runner refuses nothing; one unknown consistency delay is named', async () => {
    const [entry] = await loadAdapters(['stripe']);
    const shipped = (await cardsOf(entry!)).find((c) => c.card.operation === 'stripe.refunds.create')!.card;
    // The shipped card leaves the late-apply bound and the key comparison unknown (no public source states them):
    // known here, so every fact is.
    const stripe = {
      ...shipped,
      providerKey: { ...shipped.providerKey, caseSensitive: { value: true, source: 'test: a known comparison' } },
      lookup: { ...shipped.lookup, lateApplyBound: { value: '10m' as const, source: 'test: a known bound' } },
      unverified: shipped.unverified.filter(
        (u) => u.field !== 'lookup.lateApplyBound' && u.field !== 'providerKey.caseSensitive',
      ),
    };
    expect(refusals(stripe)).toEqual([]);
    const from = join(dir, 'almost.json');
    const { unverified: _u, ...rest } = JSON.parse(JSON.stringify(stripe)) as Record<string, unknown>;
    const lookup = rest.lookup as Record<string, unknown>;
    delete lookup.consistencyDelay;
    writeFileSync(from, JSON.stringify(rest));
    const r = await cardsInit({ from });
    expect(r.unknowns).toEqual(['providerKey.scope', 'lookup.consistencyDelay']); // the first was unknown in the file already
    expect(r.refusals).toEqual([
      expect.stringMatching(/"not found" is never taken as "not applied" \(card lookup\.consistencyDelay = unknown\)/),
    ]);
  });

  it("keeps the file's intent normalisation, param comparison and replay indicator: dropped, the id would change", async () => {
    const [entry] = await loadAdapters(['stripe']);
    const shipped = (await cardsOf(entry!)).find((c) => c.card.operation === 'stripe.paymentIntents.create')!.card;
    const from = join(dir, 'with-rules.json');
    writeFileSync(from, JSON.stringify(shipped));
    const { card } = await cardsInit({ from });
    expect(card.businessOperationId.normalize).toEqual(shipped.businessOperationId.normalize);
    expect(card.paramComparison).toEqual(shipped.paramComparison);
    expect(card.storedResult.replayIndicator).toEqual(shipped.storedResult.replayIndicator);
  });

  it('through the CLI: prints the card on stdout and the refusals on stderr; a file missing the operation is refused (exit 2), nothing written', async () => {
    const from = join(dir, 'partial.yaml');
    writeFileSync(from, PARTIAL_CARD);
    const ok = await cli(['cards', 'init', '--from', from]);
    expect(ok.code).toBe(0);
    expect(ok.stdout).toMatch(/operation: acme\.orders\.create/);
    expect(ok.stderr).toMatch(/the runner will refuse:\n {2}- no re-send/);
    writeFileSync(
      from,
      PARTIAL_CARD.replace('operation: acme.orders.create\n', '').replace(
        'kind: { value: create',
        'kind: { value: creat',
      ),
    );
    const out = join(dir, 'never.json');
    const bad = await cli(['cards', 'init', '--from', from, '--out', out]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/operation: required/);
    expect(bad.stderr).toMatch(/sideEffect\.kind\.value: expected one of/);
    expect(() => readFileSync(out)).toThrow();
    // An empty --from names no file: refused, never an empty non-interactive card.
    const empty = await cli(['cards', 'init', '--from', '', '--out', out]);
    expect(empty.code).toBe(2);
    expect(empty.stderr).toMatch(/cannot read/);
    expect(() => readFileSync(out)).toThrow();
  });

  it('run twice with the same --out: the card written first (maybe edited since) is kept, the second is refused (exit 2)', async () => {
    const from = join(dir, 'twice.yaml');
    const out = join(dir, 'twice.card.yaml');
    writeFileSync(from, PARTIAL_CARD);
    expect((await cli(['cards', 'init', '--from', from, '--out', out])).code).toBe(0);
    writeFileSync(out, `${readFileSync(out, 'utf8')}# edited by hand\n`);
    const again = await cli(['cards', 'init', '--from', from, '--out', out]);
    expect(again.code).toBe(2);
    expect(again.stderr).toContain(
      `--out ${out}: the file exists; a card is never written over (remove it, or name another)`,
    );
    expect(readFileSync(out, 'utf8')).toMatch(/# edited by hand\n$/);
  });

  it('interactive on a closed stdin: nothing to ask, so the fields that cannot be unknown are named, once each (exit 2)', async () => {
    const r = await cli(['cards', 'init']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^Intent fields \(businessOperationId\.intentFields\) \[comma-separated; required\]: \n/); // it asked, then saw the end of input
    const error = r.stderr.split('\n').find((l) => l.includes('retrysafe: the card cannot be completed'))!;
    expect(error).toMatch(/businessOperationId\.intentFields: required/);
    expect(error).toMatch(/provider: required/);
    expect(error).not.toMatch(/businessOperationId\.rule/);
    expect(error).not.toMatch(/businessOperationId: missing/);
  });
});

describe('retrysafe cards init (interactive)', () => {
  it('asks field by field; an empty answer leaves a fact unknown, a wrong answer is asked again, a fact needs its source', async () => {
    const prompts: string[] = [];
    // the order is the schema's, with intent fields first: read it from the leaves
    const { cardLeaves } = await import('../src/commands/cards/init/index.js');
    const order = cardLeaves().map((l) => l.path);
    const script: Record<string, string[]> = {
      'businessOperationId.intentFields': ['ticketRef'],
      provider: ['acme'],
      operation: ['acme.tickets.create'],
      'sideEffect.kind': ['make', 'create', 'https://docs.acme.example/tickets'],
      'limits.maxAttempts': ['2'],
    };
    const lines = order.flatMap((p) => script[p] ?? ['']);
    const r = await cardsInit({ input: Readable.from(lines.map((l) => `${l}\n`)), prompt: (t) => prompts.push(t) });
    expect(r.card.sideEffect.kind).toEqual({ value: 'create', source: 'https://docs.acme.example/tickets' });
    expect(r.card.limits.maxAttempts).toBe(2);
    expect(r.card.operation).toBe('acme.tickets.create');
    expect(r.card.providerKey.travels.value).toBe('unknown');
    expect(prompts.join('')).toMatch(/Side-effect kind \(sideEffect\.kind\) \[create \| send \| set/);
    expect(prompts.join('')).toMatch(/expected one of create, send/);
    expect(validateCard(r.card).ok).toBe(true);
  });
});

describe('retrysafe cards validate', () => {
  it('reads card files as the runner would: a good YAML card passes with its refusals, a typo fails with its path (exit 1)', async () => {
    const from = join(dir, 'partial.yaml');
    writeFileSync(from, PARTIAL_CARD);
    await cardsInit({ from, out: join(dir, 'good.yaml') });
    writeFileSync(join(dir, 'bad.json'), JSON.stringify({ ...readCardFile(join(dir, 'good.yaml')), concurency: 'x' }));
    const r = await cli(['cards', 'validate', join(dir, 'good.yaml'), join(dir, 'bad.json')]);
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(
      /✓ .*good\.yaml: acme\.orders\.create \(\d+ unknown fact\(s\)\)\n {2}the runner will refuse:/,
    );
    expect(r.stderr).toMatch(/✗ .*bad\.json: 1 problem\(s\)\n {2}- concurency: unexpected field/);
  });

  it('a card that leaves sideEffect.rejectionMayCreate out fails, naming the field and its choices (left out it read as false)', async () => {
    const from = join(dir, 'partial.yaml');
    writeFileSync(from, PARTIAL_CARD);
    await cardsInit({ from, out: join(dir, 'full.yaml') });
    const card = readCardFile(join(dir, 'full.yaml'));
    const { rejectionMayCreate: _r, ...sideEffect } = card.sideEffect;
    const unverified = card.unverified.filter((u) => u.field !== 'sideEffect.rejectionMayCreate');
    writeFileSync(join(dir, 'old.json'), JSON.stringify({ ...card, sideEffect, unverified }));
    const r = await cli(['cards', 'validate', join(dir, 'old.json')]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/- sideEffect\.rejectionMayCreate: missing \(.*one of true, false, "unknown"\)/);
  });
});

describe('readCardFile', () => {
  it('a JSON card with a typo is a CardValidationError naming the field', () => {
    const file = join(dir, 'c.json');
    writeFileSync(file, JSON.stringify({ cardVersion: 1, provider: 'x', operation: 'x.y', sideEfect: {} }));
    try {
      readCardFile(file);
      expect.unreachable();
    } catch (e) {
      expect(CardValidationError.isInstance(e)).toBe(true);
      expect((e as CardValidationError).problems.map((p) => p.path)).toEqual(
        expect.arrayContaining(['sideEffect', 'sideEfect']),
      );
    }
  });
});
