import { readDataFile } from '@retrysafe/config';
import { UsageError } from './errors.js';

/** A JSON or YAML file that must hold one object; `notObject` is the refusal when it does not. */
export function readObjectFile(path: string, notObject: string): Record<string, unknown> {
  const value = readDataFile(path);
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new UsageError(notObject);
  return value as Record<string, unknown>;
}
