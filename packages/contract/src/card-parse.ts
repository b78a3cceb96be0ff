import type { RetrySafetyCard } from './card.js';
import { CARD_SCHEMA_VERSION, deepFreeze, validateCard } from './card-validate.js';
import { CardValidationError } from './errors.js';

/** A card read from JSON or YAML data, without its editor `$schema`, validated and deep-frozen (CardValidationError). */
export function parseCard(data: unknown, origin = '(card data)'): RetrySafetyCard {
  if (typeof data !== 'object' || data === null || Array.isArray(data)) {
    throw new CardValidationError(origin, [{ path: '(card)', message: 'expected an object (a retry safety card)' }]);
  }
  const { $schema: _schema, ...rest } = data as Record<string, unknown>;
  const version = rest.cardVersion;
  if (version !== CARD_SCHEMA_VERSION) {
    throw new CardValidationError(origin, [
      {
        path: 'cardVersion',
        message:
          version === undefined
            ? `missing: write cardVersion: ${CARD_SCHEMA_VERSION}`
            : `cardVersion ${JSON.stringify(version)} is not supported here (this retrysafe reads version ${CARD_SCHEMA_VERSION})`,
      },
    ]);
  }
  const copy = structuredClone(rest) as unknown as RetrySafetyCard;
  const v = validateCard(copy);
  if (!v.ok) throw new CardValidationError(typeof rest.operation === 'string' ? rest.operation : origin, v.problems);
  return deepFreeze(copy);
}
