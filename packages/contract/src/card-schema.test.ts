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
