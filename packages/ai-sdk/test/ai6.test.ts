// AI SDK 6: this package's tools, loaded with `ai` resolved to ai@6 (npm alias ai6).
import { describe, expect, it, vi } from 'vitest';
import { reissuedToolCall } from './ai-versions.js';

vi.mock('ai', async () => await import('ai6'));

describe('AI SDK 6', () => {
  it('the installed major is 6', async () => {
    const { createRequire } = await import('node:module');
    expect(createRequire(import.meta.url)('ai6/package.json').version).toMatch(/^6\./);
  });
  it('a re-issued tool call maps to the same business operation: one charge, the same result', async () => {
    await reissuedToolCall(await import('ai6'), (await import('ai6/test')) as never, 'v3', '6');
  });
});
