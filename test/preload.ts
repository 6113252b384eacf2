/**
 * Loaded before every test file (bunfig.toml). The broker serves Kafka on 9092 by default; the
 * brokers the tests start as child processes (many at once, and beside whatever else this machine
 * runs) would fight over that one port. So every child inherits BOOBLIK_KAFKA_PORT=off unless the
 * test asks for a listener itself (`--kafka-port 0`, a flag wins over the variable). The test of the
 * default itself (test/kafka/clients.test.ts) spawns its broker without this variable.
 */
process.env.BOOBLIK_KAFKA_PORT ??= "off";
