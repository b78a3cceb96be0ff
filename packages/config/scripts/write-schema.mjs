// Writes schema.json from the schema object parseConfig checks against (run: pnpm --filter @retrysafe/config schema).
import { writeFileSync } from 'node:fs';
import { configSchema } from '../dist/index.js';

writeFileSync(new URL('../schema.json', import.meta.url), JSON.stringify(configSchema, null, 2) + '\n');
