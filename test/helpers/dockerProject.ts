// Runs before every test file of the jest "docker" project: the same suites, on the Docker backend.
process.env.BROKER_TEST_BACKEND = 'docker';
process.env.BROKER_IMAGE ??= 'bash-broker-test:latest';
