"""The local services (DynamoDB Local, a moto server) and their clients: one copy of each helper."""
