import { expect } from 'vitest';
import { ConfigError, parseConfig } from '../src/index.js';

/** The problems `parseConfig` reports for `raw` (it must refuse it with a ConfigError). */
export function problemsOf(raw: unknown, baseDir: string): string {
  try {
    parseConfig(raw, baseDir);
  } catch (e) {
    expect(ConfigError.isInstance(e)).toBe(true);
    return (e as Error).message;
  }
  throw new Error('expected a ConfigError');
}
