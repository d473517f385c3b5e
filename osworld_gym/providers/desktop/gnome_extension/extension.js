// GNOME Shell's side of a light reset (osworld_gym/providers/desktop/gnome_session.py).
//
// A reset keeps a running GNOME Shell only if it is as fresh as a new one. Most of its state
// the reset sees from outside (its X windows and grabs, its settings in dconf); what only the
// shell knows, it answers here, over the session bus:
//   Freshen() -> s   closes what an episode leaves behind that a new shell would not show
//                    (notifications), then names what cannot be undone (code run inside the
//                    shell, extensions enabled, the overview or a menu left open), "" if none.
// Anyone on the bus may call it: it only ever makes the shell fresher, and tells nothing that
// is not on the screen.

const { Gio } = imports.gi;
const Main = imports.ui.main;
const ExtensionUtils = imports.misc.extensionUtils;

const BUS_NAME = 'org.osworldgym.ShellState';
const OBJECT_PATH = '/org/osworldgym/ShellState';
const INTERFACE = `<node>
  <interface name="org.osworldgym.ShellState">
    <method name="Freshen"><arg type="s" direction="out" name="stale"/></method>
  </interface>
</node>`;

class ShellState {
    enable() {
        this._object = Gio.DBusExportedObject.wrapJSObject(INTERFACE, this);
        this._object.export(Gio.DBus.session, OBJECT_PATH);
        this._name = Gio.bus_own_name_on_connection(
            Gio.DBus.session, BUS_NAME, Gio.BusNameOwnerFlags.DO_NOT_QUEUE, null, null);
    }

    disable() {
        Gio.bus_unown_name(this._name);
        this._object.unexport();
        this._object = null;
    }

    Freshen() {
        // Notifications outlive the programs that sent them: a new shell shows none.
        for (const source of Main.messageTray.getSources())
            source.destroy();
        const stale = [];
        if (global.context.unsafe_mode)
            stale.push('unsafe mode is on');
        if (Main.lookingGlass)
            stale.push('Looking Glass was opened');
        // A fresh session runs the extensions its session mode enables (this one and the dock),
        // and no other.
        const sessionExtensions = Main.sessionMode.enabledExtensions;
        const manager = Main.extensionManager;
        for (const uuid of manager.getUuids()) {
            const extension = manager.lookup(uuid);
            const enabled = extension.state === ExtensionUtils.ExtensionState.ENABLED;
            if (enabled !== sessionExtensions.includes(uuid))
                stale.push(`extension ${uuid} is ${enabled ? 'enabled' : 'not enabled'}`);
        }
        if (Main.overview.visible)
            stale.push('the overview is open');
        if (Main.modalCount > 0)
            stale.push(`${Main.modalCount} modal dialog(s) or menu(s) open`);
        return stale.join('; ');
    }
}

function init() {
    return new ShellState();
}
