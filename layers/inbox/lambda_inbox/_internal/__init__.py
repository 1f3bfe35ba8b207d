"""What belongs to no stage: the services' limits (`limits`)."""
