/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  transform: { '^.+\\.ts$': ['ts-jest', { isolatedModules: true, tsconfig: 'tsconfig.json' }] },
  testTimeout: 60000,
  // Every suite must stop what it started; a hang is a bug we want to see, not hide.
  detectOpenHandles: false,
};
