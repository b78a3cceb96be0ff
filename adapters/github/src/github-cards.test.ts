// The cards against what GitHub's REST documentation states, and the SDK fact the retry layer rests on
// (the installed @octokit/rest carries no retry or throttling plugin).
import { Octokit } from '@octokit/rest';
import { validateCard } from '@retrysafe/contract';
import { describe, expect, it } from 'vitest';
import { gitHubCards } from './github-cards.js';
import { gitHubOperations } from './github-operations.js';

describe('every card', () => {
  it.each(Object.entries(gitHubCards))(
    '%s validates, lists every unknown in unverified, and matches its operation',
    (name, card) => {
      const v = validateCard(card);
      expect(v.problems).toEqual([]);
      const listed = new Set<string>(card.unverified.map((u) => u.field));
      for (const path of v.unknowns) expect(listed.has(path)).toBe(true);
      expect(card.operation).toBe(`github.${name}`);
      expect(gitHubOperations[name]?.card).toBe(card);
      expect(Object.isFrozen(card)).toBe(true);
    },
  );

  it.each(Object.entries(gitHubCards))(
    '%s: no key, nothing stored, duplicates; a list lookup whose "not found" proves nothing; every fact cites docs.github.com or the SDK',
    (_name, card) => {
      expect(card.providerKey.travels.value).toBe('none');
      expect(card.storedResult.semantics.value).toBe('none');
      expect(card.concurrency.value).toBe('duplicates');
      expect(card.lookup.consistencyDelay.value).toBe('unknown');
      expect(card.lookup.lateApplyBound.value).toBe('unknown');
      expect(card.reconciler).not.toMatch(/search\/issues/);
      const sources = JSON.stringify(card).match(/"source":"[^"]*"/g) ?? [];
      for (const s of sources) expect(s).toMatch(/docs\.github\.com|@octokit/);
    },
  );
});

it('@octokit/rest is built from core + request-log + paginate + endpoint methods only: no plugin resends', () => {
  const names = ((Octokit as unknown as { plugins: { name: string }[] }).plugins ?? []).map((p) => p.name);
  expect(names.length).toBeGreaterThan(0);
  expect(names).not.toContain('retry');
  expect(names).not.toContain('throttling');
});
