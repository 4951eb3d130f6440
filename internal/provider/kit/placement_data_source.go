package kit

const LogSubsystem = "scheduler"
