import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { sampleCard } from './__fixtures__/sample-card.js';
import { cardRows } from './card-render.js';
import { CARD_SCHEMA_ID } from './card-validate.js';
import { CARD_SCHEMA_VERSION, CardValidationError, cardJsonSchema, parseCard, type RetrySafetyCard } from './index.js';

const validCard = () => sampleCard as unknown as RetrySafetyCard;

describe('the published card schema', () => {
  it('schema/retry-safety-card.v1.schema.json is cardJsonSchema() (regenerate: node packages/contract/scripts/write-card-schema.mjs)', () => {
    const file = readFileSync(
      new URL(`../schema/retry-safety-card.v${CARD_SCHEMA_VERSION}.schema.json`, import.meta.url),
      'utf8',
    );
    expect(JSON.parse(file)).toEqual(cardJsonSchema());
  });

  it('is versioned with cardVersion and names every field the card type has', () => {
    const schema = cardJsonSchema() as {
      $id: string;
      properties: Record<string, { const?: unknown; properties?: Record<string, unknown> }>;
      required: string[];
    };
    expect(schema.$id).toBe(CARD_SCHEMA_ID);
    expect(schema.$id).toMatch(/v1$/);
    expect(schema.properties.cardVersion).toEqual({ const: 1 });
    for (const row of cardRows(validCard())) {
      const [top, sub] = row.path.split('.');
      expect(schema.required, row.path).toContain(top);
      if (sub) expect(Object.keys(schema.properties[top!]!.properties ?? {}), row.path).toContain(sub);
    }
  });
});

/** Every optional field of the card, and why leaving it out reads as the safe answer (never send, adopt or fold). */
const OPTIONAL_AND_SAFE_WHEN_ABSENT = {
  'businessOperationId.normalize': 'no step merges two values: distinct values keep distinct ids',
  'businessOperationId.optionalIntentFields': 'every intent field is required: a call without one is refused',
  paramComparison: 'every other param compared exactly: a changed one is a conflict',
  'storedResult.replayIndicator': 'an answer reads as performed, not replayed: adopted either way',
  'providerKey.caseSensitive': 'unknown: no derived key relies on letter case to tell two ids apart',
  'lookup.lateApplyBound': 'unknown: a lookup that finds nothing never proves absence',
  'limits.clockSkewMargin': 'a policy, not a provider fact: the default margin',
};

describe('a field left out', () => {
  it('is one of the fields whose absence reads as the safe answer; any other must be written', () => {
    const optional: string[] = [];
    const walk = (s: { properties?: Record<string, unknown>; required?: string[] }, path: string) => {
      for (const [k, sub] of Object.entries(s.properties ?? {})) {
        const at = path ? `${path}.${k}` : k;
        if (k !== '$schema' && !s.required?.includes(k)) optional.push(at);
        const node = sub as { type?: string; properties?: { value?: unknown } };
        if (node.type === 'object' && !node.properties?.value) walk(node as never, at);
      }
    };
    walk(cardJsonSchema() as never, '');
    expect(optional.sort()).toEqual(Object.keys(OPTIONAL_AND_SAFE_WHEN_ABSENT).sort());
  });

  it('sideEffect.rejectionMayCreate is required, and the refusal names its choices (left out it read as false)', () => {
    const { rejectionMayCreate: _r, ...sideEffect } = sampleCard.sideEffect;
    try {
      parseCard({ ...validCard(), sideEffect }, 'my-card.yaml');
      expect.unreachable();
    } catch (e) {
      expect(CardValidationError.isInstance(e), String(e)).toBe(true);
      expect((e as CardValidationError).problems).toEqual([
        { path: 'sideEffect.rejectionMayCreate', message: expect.stringContaining('one of true, false, "unknown"') },
      ]);
    }
  });
});

describe('parseCard (a card read from JSON or YAML data)', () => {
  it('accepts a valid card with an editor $schema entry and returns it frozen, without $schema', () => {
    const card = parseCard({ $schema: './card.schema.json', ...JSON.parse(JSON.stringify(validCard())) });
    expect(card.operation).toBe(validCard().operation);
    expect('$schema' in card).toBe(false);
    expect(Object.isFrozen(card.lookup)).toBe(true);
  });

  it('refuses a cardVersion it does not know, naming the version it reads', () => {
    const err = (() => {
      try {
        parseCard({ ...validCard(), cardVersion: 2 });
      } catch (e) {
        return e;
      }
    })();
    expect(CardValidationError.isInstance(err)).toBe(true);
    expect((err as CardValidationError).problems).toEqual([
      { path: 'cardVersion', message: 'cardVersion 2 is not supported here (this retrysafe reads version 1)' },
    ]);
  });

  it('refuses a misspelled field with its path, and lists every problem at once', () => {
    const raw = JSON.parse(JSON.stringify(validCard())) as Record<string, Record<string, unknown>>;
    raw.lookup = { methd: raw.lookup!.method, consistencyDelay: raw.lookup!.consistencyDelay };
    raw.retention = { minimum: { value: '24 hours', source: 'https://example.test' } };
    try {
      parseCard(raw, 'my-card.yaml');
      expect.unreachable();
    } catch (e) {
      const paths = (e as CardValidationError).problems.map((p) => p.path);
      expect(paths).toEqual(expect.arrayContaining(['lookup.method', 'lookup.methd', 'retention.minimum.value']));
    }
  });
});
