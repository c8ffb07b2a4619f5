; Captionist's Windows installer (Inno Setup 6.3 or newer). packaging/Makefile's `windows` target runs:
;
;   iscc -DAppVersion=0.1.0 -DSourceDir=dist/captionist -DOutputDir=dist -DIconFile=build/packaging/icons/captionist.ico captionist.iss
;
; The version comes from app/captionist/_version.py through the Makefile; nothing here repeats it.
; Per-user install without administrator rights: %LOCALAPPDATA%\Programs\Captionist, a Start-menu
; entry, an uninstaller in Settings -> Apps. Settings, models and transcripts are the user's and stay.

#ifndef AppVersion
  #error Pass the version: iscc -DAppVersion=X.Y.Z (make -C packaging windows does)
#endif
#ifndef SourceDir
  #define SourceDir "..\..\dist\captionist"
#endif
#ifndef OutputDir
  #define OutputDir "..\..\dist"
#endif
#ifndef IconFile
  #define IconFile "..\..\build\packaging\icons\captionist.ico"
#endif

[Setup]
AppId={{8E0C4B6A-3F51-4C2B-9A57-6D1E2F0B7C31}
AppName=Captionist
AppVersion={#AppVersion}
AppVerName=Captionist {#AppVersion}
AppPublisher=Captionist
VersionInfoVersion={#AppVersion}
DefaultDirName={autopf}\Captionist
DefaultGroupName=Captionist
DisableProgramGroupPage=yes
PrivilegesRequired=lowest
PrivilegesRequiredOverridesAllowed=dialog
ArchitecturesAllowed=x64compatible
ArchitecturesInstallIn64BitMode=x64compatible
OutputDir={#OutputDir}
OutputBaseFilename=Captionist-{#AppVersion}-windows-x64-setup
SetupIconFile={#IconFile}
UninstallDisplayIcon={app}\Captionist.exe
UninstallDisplayName=Captionist
Compression=lzma2/max
SolidCompression=yes
WizardStyle=modern
CloseApplications=yes

[Tasks]
Name: "desktopicon"; Description: "{cm:CreateDesktopIcon}"; GroupDescription: "{cm:AdditionalIcons}"; Flags: unchecked

[Files]
Source: "{#SourceDir}\*"; DestDir: "{app}"; Flags: ignoreversion recursesubdirs createallsubdirs

[Icons]
Name: "{autoprograms}\Captionist"; Filename: "{app}\Captionist.exe"; Comment: "Live captions, fully offline"
Name: "{autodesktop}\Captionist"; Filename: "{app}\Captionist.exe"; Tasks: desktopicon

[Run]
Filename: "{app}\Captionist.exe"; Description: "{cm:LaunchProgram,Captionist}"; Flags: nowait postinstall skipifsilent

[UninstallDelete]
; Files the app's Python runtime may leave beside itself (bytecode caches); the user's data lives elsewhere.
Type: filesandordirs; Name: "{app}\_internal\__pycache__"
