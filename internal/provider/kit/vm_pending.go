package kit

// restartHint says how a running VM takes what PVE keeps pending.
const RestartHint = "stop and start it, or reboot it from Proxmox VE; a reboot inside the guest is not enough"
