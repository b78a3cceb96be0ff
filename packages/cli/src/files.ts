import { readFileSync } from 'node:fs';
import { extname } from 'node:path';
import { parseCard, type RetrySafetyCard } from '@retrysafe/contract';
import { parse as parseYaml } from 'yaml';
import { UsageError } from './errors.js';

/** Parses a JSON or YAML file (by extension; `.yaml`/`.yml` are YAML, everything else JSON) into plain data. */
export function readDataFile(path: string): unknown {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new UsageError(`${path}: cannot read it (${(e as NodeJS.ErrnoException).code ?? String(e)})`);
  }
  const yaml = ['.yaml', '.yml'].includes(extname(path).toLowerCase());
  try {
    return yaml ? parseYaml(text, { prettyErrors: true, uniqueKeys: true }) : JSON.parse(text);
  } catch (e) {
    throw new UsageError(`${path}: not valid ${yaml ? 'YAML' : 'JSON'}: ${(e as Error).message.split('\n')[0]}`);
  }
}

/**
 * A retry safety card from a JSON or YAML file (the format the published schema describes:
 * `@retrysafe/contract/schema/retry-safety-card.v1.schema.json`). Throws CardValidationError listing
 * every problem, or a UsageError when the file cannot be read or parsed.
 */
export function readCardFile(path: string): RetrySafetyCard {
  return parseCard(readDataFile(path), path);
}
