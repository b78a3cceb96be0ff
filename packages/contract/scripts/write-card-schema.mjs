// Writes the published card JSON Schema from the built contract (`pnpm build` first):
//   node packages/contract/scripts/write-card-schema.mjs
// src/card-schema.test.ts fails when the file and cardJsonSchema() differ.
import { writeFileSync } from 'node:fs';
import { CARD_SCHEMA_VERSION, cardJsonSchema } from '../dist/index.js';

const file = new URL(`../schema/retry-safety-card.v${CARD_SCHEMA_VERSION}.schema.json`, import.meta.url);
writeFileSync(file, `${JSON.stringify(cardJsonSchema(), null, 2)}\n`);
console.log(`wrote ${file.pathname}`);
