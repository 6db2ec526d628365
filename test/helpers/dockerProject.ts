// Runs before every test file of the jest "docker" project: the same suites, on the Docker backend.
process.env.BROKER_TEST_BACKEND = 'docker';
process.env.BROKER_IMAGE ??= 'bash-broker-test:latest';
// No network for test containers (none of the suites needs one). With Docker 20.10's bridge driver, a
// heavily loaded engine deadlocked in libnetwork here (every container start stuck in
// initializeNetworking behind SandboxDestroy/processEndpointDelete, seen in a goroutine dump), which
// hangs a whole run; without an endpoint to create and delete a start also costs the engine less.
process.env.BROKER_NETWORK_MODE ??= 'none';
