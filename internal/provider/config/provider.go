package config

// Environment variables, named as in the bpg provider so existing credentials work unchanged.
const (
	EnvEndpoint = "PROXMOX_VE_ENDPOINT"
	EnvToken    = "PROXMOX_VE_API_TOKEN"
	EnvUsername = "PROXMOX_VE_USERNAME"
	EnvPassword = "PROXMOX_VE_PASSWORD"
	EnvInsecure = "PROXMOX_VE_INSECURE"
)
