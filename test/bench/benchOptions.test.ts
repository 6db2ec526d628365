/**
 * benchOptions: a bench's options declared once, checked strictly, with the usage line made from them.
 * @backend any
 */
import path from 'node:path';
import { benchOptions } from '../../bench/lib/options';

const SPECS = {
  rounds: { kind: 'int', min: 1, max: 9 },
  backend: { kind: 'word', of: ['local', 'docker'] },
  label: { kind: 'text', what: 'TEXT' },
  out: { kind: 'path', what: 'DIR' },
  profile: { kind: 'flag' },
} as const;

describe('benchOptions', () => {
  it('gives the options given, typed; the absent ones are absent', () => {
    expect(benchOptions('b', ['--rounds', '3', '--backend', 'docker', '--profile', '--out', 'x'], SPECS)).toEqual({ rounds: 3, backend: 'docker', profile: true, out: path.resolve('x') });
    expect(benchOptions('b', [], SPECS)).toEqual({});
  });

  it.each([
    [['--rounds', '0'], "--rounds: an integer from 1 to 9, got '0'"],
    [['--rounds', '1.5'], "--rounds: an integer from 1 to 9, got '1.5'"],
    [['--backend', 'vm'], "--backend: one of local, docker, got 'vm'"],
    [['--bogus', '1'], "Unknown option '--bogus'"],
    [['--label'], "Option '--label <value>' argument missing"],
    [['stray'], 'stray'],
  ])('refuses %j, naming it, with the usage line', (argv, message) => {
    expect(() => benchOptions('npm run b', argv, SPECS)).toThrow(message);
    expect(() => benchOptions('npm run b', argv, SPECS)).toThrow('usage: npm run b [-- --rounds N --backend local|docker --label TEXT --out DIR --profile]');
  });
});
